#include "select/selector.h"

#include <ATen/ATen.h>

#include "common/named.h"
#include "select/importance.h"

namespace impress {
namespace {

// Each query head keeps its own top-k; a KV head's values serve the union of
// its query heads' sets, and each query head sees only its own (PAPER.md, GQA).
SelectedPrefix H2O(const LayerQkv& qkv, const at::Tensor& pk, const at::Tensor& pv, int64_t k) {
  SelectedPrefix s;
  const int64_t p = pk.size(1);
  at::Tensor imp = PrefixImportance(qkv.q, pk, qkv.k, qkv.scale);  // [Hq, P]
  at::Tensor sets = TopKSets(imp, k);                               // [Hq, k]
  at::Tensor keep = at::zeros({qkv.q.size(0), p}, at::TensorOptions().dtype(at::kBool).device(pk.device()));
  keep.scatter_(1, sets, true);
  s.kv = PrefixKv{pk, pv, keep};
  s.total = p;
  s.kept = k;
  return s;
}

}  // namespace

at::Tensor ProbeImportance(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& probe_keys) {
  const int64_t hq = qkv.q.size(0), hkv = qkv.k.size(0), g = hq / hkv;
  const std::vector<int64_t> heads = ProbeQueryHeads(opt.probe_heads, hq, hkv, opt.probe_layout);
  const int64_t probes = static_cast<int64_t>(heads.size()), probe_kv = ProbeKvHeads(heads, hq, hkv);
  if (heads.back() == probes - 1)  // heads 0..probes-1: the groups of the first KV heads, as they are
    return PrefixImportance(qkv.q.slice(0, 0, probe_kv * g), probe_keys.slice(0, 0, probe_kv),
                            qkv.k.slice(0, 0, probe_kv), qkv.scale)
        .slice(0, 0, probes);
  // Elsewhere each probe head is paired with its own KV head's keys.
  std::vector<int64_t> kv;
  for (int64_t h : heads) kv.push_back(h / g);
  const at::Tensor hi = at::tensor(heads, at::kLong).to(qkv.q.device());
  const at::Tensor ki = at::tensor(kv, at::kLong).to(qkv.q.device());
  return PrefixImportance(qkv.q.index_select(0, hi), probe_keys.index_select(0, ki.to(probe_keys.device())),
                          qkv.k.index_select(0, ki), qkv.scale);
}

SelectedPrefix SelectFromPrefix(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& pk,
                                const at::Tensor& pv) {
  IMPRESS_CHECK(!qkv.attend_new.defined());  // importance reads the rows as one causal sequence
  const int64_t p = pk.defined() ? pk.size(1) : 0;
  const int64_t k = p > 0 ? RetainedTokens(opt.retention, p) : 0;
  SelectedPrefix s;
  s.total = p;
  s.kept = p;
  s.kv = PrefixKv{pk, pv, {}};
  if (p == 0 || opt.kind == SelectorKind::kFull || k >= p) return s;  // keeping everything is full reuse, exactly
  if (opt.kind == SelectorKind::kH2O) return H2O(qkv, pk, pv, k);

  // IMPRESS: the probe query heads' importance from the keys of the KV heads they use.
  at::Tensor imp = ProbeImportance(opt, qkv, pk);
  const int64_t c = opt.chunk_tokens;
  ItfDecision d = opt.unit == ItfUnit::kChunk
                      ? DecideItf(imp, k, opt.alpha, at::arange(p, at::kLong).div(c, "floor"), (p + c - 1) / c)
                      : DecideItf(imp, k, opt.alpha);
  if (!d.trusted) {
    SelectedPrefix f = H2O(qkv, pk, pv, k);
    f.probed = f.fallback = true;
    f.similarity = d.similarity;
    return f;
  }
  at::Tensor idx = d.agreed.to(pk.device());
  s.kv = PrefixKv{pk.index_select(1, idx), pv.index_select(1, idx), {}};
  s.kept = idx.numel();
  s.probed = true;
  s.similarity = d.similarity;
  return s;
}

void SelectionCounters::Add(int layer, const SelectedPrefix& s) {
  probes[layer] += s.probed;
  fallbacks[layer] += s.fallback;
  kept[layer] += s.kept;
  total[layer] += s.total;
  if (s.probed) {
    similarity_sum += s.similarity;
    ++similarity_n;
  }
}

void SelectionCounters::Merge(const SelectionCounters& o) {
  for (size_t l = 0; l < o.probes.size() && l < probes.size(); ++l) {
    probes[l] += o.probes[l];
    fallbacks[l] += o.fallbacks[l];
    kept[l] += o.kept[l];
    total[l] += o.total[l];
  }
  similarity_sum += o.similarity_sum;
  similarity_n += o.similarity_n;
}

double SelectionCounters::FallbackShare() const {
  int64_t p = 0, f = 0;
  for (size_t l = 0; l < probes.size(); ++l) p += probes[l], f += fallbacks[l];
  return p ? double(f) / p : 0;
}

double SelectionCounters::KeptShare() const {
  int64_t k = 0, t = 0;
  for (size_t l = 0; l < kept.size(); ++l) k += kept[l], t += total[l];
  return t ? double(k) / t : 1;
}

SelectedContextKv::SelectedContextKv(int layers, Source source)
    : source_(std::move(source)), prefix_(layers), chosen_(layers, false), tail_(layers) {}

PrefixKv SelectedContextKv::Prefix(const LayerQkv& qkv) {
  const int l = qkv.layer;
  if (!chosen_[l]) {
    prefix_[l] = source_(qkv).kv;
    chosen_[l] = true;
  }
  const PrefixKv& p = prefix_[l];
  PrefixKv tail = tail_.Prefix(qkv);
  if (!tail.k.defined()) return p;
  if (!p.k.defined()) return tail;
  PrefixKv out{at::cat({p.k, tail.k}, 1), at::cat({p.v, tail.v}, 1), {}};
  if (p.keep.defined())
    out.keep = at::cat({p.keep, at::ones({p.keep.size(0), tail.k.size(1)}, p.keep.options())}, 1);
  return out;
}

const std::vector<std::string>& ItfUnitNames() {
  static const std::vector<std::string> names = {"token", "chunk"};
  return names;
}

StatusOr<ItfUnit> ParseItfUnit(const std::string& name) {
  return ParseNamed<ItfUnit>(ItfUnitNames(), name, "--itf-unit", "unit");
}

}  // namespace impress
