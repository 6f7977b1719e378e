// H2O (the AS+H2O baselines): each query head keeps the k prefix tokens with
// the highest importance under its own queries (docs/paper.md §1).
#include <ATen/ATen.h>

#include "common/device_copy.h"
#include "select/importance.h"
#include "select/method.h"

namespace impress {

StatusOr<SelectedPrefix> SelectH2O(const LayerQkv& qkv, PrefixSource& src, int64_t k, const ImportanceShape& shape,
                                   SelectionObserver* observer) {
  const int l = qkv.layer;
  SelectedPrefix s;
  RETURN_IF_ERROR(src.Keys(l, &s.kv.k));
  // [Hq, P], computed on the device, ranked on the host.
  const at::Tensor imp =
      ReadBack(ShapedImportance(qkv.q, s.kv.k, qkv.k, qkv.scale, shape, src.key_room()), l, observer);
  if (observer != nullptr) {
    observer->OnStepEnd(l, SelectStep::kImportance);
    observer->OnImportance(l, imp, qkv.q.size(1));
  }
  at::Tensor keep;
  SetsUnion(TopKSets(imp, k), s.kv.k.size(1), &s.used, &keep);
  s.kv.keep = ToDevice(keep, s.kv.k.device());
  RETURN_IF_ERROR(src.Values(l, s.used, &s.kv.v));
  s.total = s.kv.k.size(1);
  s.kept = k;
  return s;
}

namespace {

class H2OMethod final : public RetainingMethod {
 public:
  explicit H2OMethod(const SelectorOptions& opt) : RetainingMethod(opt, ReadAhead::kKeys) {}

 protected:
  StatusOr<SelectedPrefix> SelectK(const LayerQkv& qkv, PrefixSource& src, int64_t k,
                                   SelectionObserver* obs) const override {
    return SelectH2O(qkv, src, k, opt_.importance, obs);
  }
};

}  // namespace

std::unique_ptr<SelectionMethod> MakeH2OMethod(const SelectorOptions& opt) { return std::make_unique<H2OMethod>(opt); }

}  // namespace impress
