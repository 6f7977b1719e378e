// IMPRESS's importance-informed three-way identification (docs/paper.md section
// 1): a few probe heads rank the prefix by importance from their keys alone;
// when their top-k sets agree (mean Jaccard above the threshold) the set
// they agree on serves every head and only its KV is read, else the layer
// takes the H2O path.
#include <ATen/ATen.h>

#include "common/device_copy.h"
#include "select/importance.h"
#include "select/method.h"

namespace impress {

at::Tensor ProbeImportance(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& probe_keys,
                           int64_t room) {
  const int64_t hq = qkv.q.size(0), hkv = qkv.k.size(0), g = hq / hkv;
  const std::vector<int64_t> heads = ProbeQueryHeads(opt.probe_heads, hq, hkv, opt.probe_layout);
  const int64_t probes = static_cast<int64_t>(heads.size()), probe_kv = ProbeKvHeads(heads, hq, hkv);
  if (heads.back() == probes - 1)  // heads 0..probes-1: the groups of the first KV heads, as they are
    return ShapedImportance(qkv.q.slice(0, 0, probe_kv * g), probe_keys.slice(0, 0, probe_kv),
                            qkv.k.slice(0, 0, probe_kv), qkv.scale, opt.importance, room)
        .slice(0, 0, probes);
  // Elsewhere each probe head is paired with its own KV head's keys (a copy: no room).
  std::vector<int64_t> kv;
  for (int64_t h : heads) kv.push_back(h / g);
  const at::Tensor hi = ToDevice(at::tensor(heads, at::kLong), qkv.q.device());
  const at::Tensor ki = ToDevice(at::tensor(kv, at::kLong), qkv.q.device());
  return ShapedImportance(qkv.q.index_select(0, hi), probe_keys.index_select(0, ToDevice(ki, probe_keys.device())),
                          qkv.k.index_select(0, ki), qkv.scale, opt.importance);
}

namespace {

class ItfMethod final : public RetainingMethod {
 public:
  explicit ItfMethod(const SelectorOptions& opt) : RetainingMethod(opt, ReadAhead::kProbeKeys) {}

 protected:
  StatusOr<SelectedPrefix> SelectK(const LayerQkv& qkv, PrefixSource& src, int64_t k,
                                   SelectionObserver* obs) const override {
    const int l = qkv.layer;
    const int64_t p = src.tokens();
    const int64_t probe_kv = ProbeKvHeads(opt_.probe_heads, qkv.q.size(0), qkv.k.size(0), opt_.probe_layout);
    at::Tensor probe_keys;
    RETURN_IF_ERROR(src.ProbeKeys(l, probe_kv, &probe_keys));
    // Computed on the device, decided on the host.
    const at::Tensor imp = ReadBack(ProbeImportance(opt_, qkv, probe_keys, src.key_room()), l, obs);
    if (obs != nullptr) obs->OnStepEnd(l, SelectStep::kImportance);
    // The chunk unit ranks the chunks as the source stores them (reordered ones included).
    const ItfDecision d = opt_.unit == ItfUnit::kChunk ? DecideItf(imp, k, opt_.alpha, src.ChunkOf(l), src.chunks())
                                                       : DecideItf(imp, k, opt_.alpha);
    if (obs != nullptr) obs->OnStepEnd(l, SelectStep::kDecision);
    SelectedPrefix s;
    if (!d.trusted) {
      ASSIGN_OR_RETURN(s, SelectH2O(qkv, src, k, opt_.importance, obs));
      s.fallback = true;
    } else {
      if (obs != nullptr) obs->OnImportance(l, imp, qkv.q.size(1));
      s.used = d.agreed.cpu();
      RETURN_IF_ERROR(src.Gather(l, s.used, &s.kv.k, &s.kv.v));
      s.total = p;
      s.kept = s.used.numel();
    }
    s.probed = true;
    s.similarity = d.similarity;
    return s;
  }
};

}  // namespace

std::unique_ptr<SelectionMethod> MakeItfMethod(const SelectorOptions& opt) { return std::make_unique<ItfMethod>(opt); }

}  // namespace impress
