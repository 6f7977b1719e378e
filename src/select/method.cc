#include "select/method.h"

#include "common/device_copy.h"
#include "select/importance.h"

namespace impress {

std::unique_ptr<SelectionMethod> MakeSelectionMethod(const SelectorOptions& opt) {
  switch (opt.kind) {
    case SelectorKind::kFull: return MakeFullMethod();
    case SelectorKind::kH2O: return MakeH2OMethod(opt);
    case SelectorKind::kItf: return MakeItfMethod(opt);
    case SelectorKind::kRandom: return MakeRandomMethod(opt);
    case SelectorKind::kDigest: return MakeDigestMethod(opt);
    case SelectorKind::kStatic: break;  // needs the prefix's own importance: the caller selects (eval/scorer.cc)
  }
  IMPRESS_CHECK(false);
  return nullptr;
}

ReadAhead RetainingMethod::Ahead(int64_t p) const {
  return RetainedTokens(opt_.retention, p) >= p ? ReadAhead::kAll : partial_;
}

StatusOr<SelectedPrefix> RetainingMethod::Select(const LayerQkv& qkv, PrefixSource& src,
                                                 SelectionObserver* observer) const {
  IMPRESS_CHECK(!qkv.attend_new.defined());  // importance reads the rows as one causal sequence
  const int64_t p = src.tokens();
  if (p == 0 || Ahead(p) == ReadAhead::kAll) return SelectAll(qkv, src);  // keeping everything is full reuse, exactly
  return SelectK(qkv, src, RetainedTokens(opt_.retention, p), observer);
}

at::Tensor ReadBack(const at::Tensor& t, int layer, SelectionObserver* observer) {
  if (observer != nullptr) observer->OnReadBack(layer);
  return ToHostNow(t);
}

StatusOr<SelectedPrefix> SelectAll(const LayerQkv& qkv, PrefixSource& src) {
  SelectedPrefix s;
  s.total = s.kept = src.tokens();
  if (s.total > 0) RETURN_IF_ERROR(src.All(qkv.layer, &s.kv.k, &s.kv.v));
  return s;
}

}  // namespace impress
