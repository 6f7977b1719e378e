#include "experiment/head_analysis.h"

#include <ATen/ATen.h>

#include <functional>

#include "common/progress.h"
#include "eval/scorer.h"
#include "model/kv_provider.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/importance.h"

namespace impress {
namespace {

// Serves the held prefix like DenseKvCache and hands each layer's H2O
// importance of it [Hq, P] to `observe` first.
class ImportanceTap final : public KvProvider {
 public:
  ImportanceTap(DenseKvCache& cache, std::function<void(int, const at::Tensor&)> observe)
      : cache_(cache), observe_(std::move(observe)) {}
  PrefixKv Prefix(const LayerQkv& qkv) override {
    PrefixKv p = cache_.Prefix(qkv);
    observe_(qkv.layer, PrefixImportance(qkv.q, p.k, qkv.k, qkv.scale));
    return p;
  }
  void Append(const LayerQkv& qkv) override { cache_.Append(qkv); }

 private:
  DenseKvCache& cache_;
  std::function<void(int, const at::Tensor&)> observe_;
};

double MeanOffDiagonal(const at::Tensor& m, int64_t n) {
  if (n < 2) return 1.0;
  at::Tensor sub = m.slice(0, 0, n).slice(1, 0, n);
  return (sub.sum().item<double>() - sub.diagonal().sum().item<double>()) / (n * (n - 1));
}

// Membership of each row's set [H, k] as a 0/1 matrix [H, n].
at::Tensor SetMask(const at::Tensor& sets, int64_t n) {
  return at::zeros({sets.size(0), n}, at::kFloat).scatter_(1, sets.cpu(), 1.0f);
}

// Pairwise Jaccard of the rows of a set mask whose rows each hold k members.
at::Tensor MaskJaccard(const at::Tensor& mask, int64_t k) {
  at::Tensor inter = at::matmul(mask, mask.t());  // |A ∩ B|; |A ∪ B| = 2k - |A ∩ B|
  return inter / (2.0 * k - inter);
}

}  // namespace

at::Tensor PairwiseJaccard(const at::Tensor& importance, int64_t k) {
  return MaskJaccard(SetMask(TopKSets(importance, k), importance.size(1)), k);
}

namespace {

// The documents' contexts and the tokens all of them share with the prefix
// (the prefix's last token can merge with a document's first).
struct SharedPrefix {
  std::vector<int32_t> ids;
  std::vector<std::vector<int32_t>> contexts;
};

StatusOr<SharedPrefix> ShareThePrefix(const Tokenizer& tok, const std::string& prefix, const std::vector<Doc>& docs) {
  SharedPrefix s;
  ASSIGN_OR_RETURN(s.ids, tok.Encode(prefix, false));
  if (s.ids.empty()) return Status::InvalidArgument("head analysis needs a non-empty prefix");
  size_t base = s.ids.size();
  for (const Doc& d : docs) {
    ASSIGN_OR_RETURN(ScoredContext ctx, TokenizeContext(tok, prefix + d.text));
    size_t common = 0;
    while (common < std::min(base, ctx.ids.size()) && ctx.ids[common] == s.ids[common]) ++common;
    base = common;
    s.contexts.push_back(std::move(ctx.ids));
  }
  if (base == 0) return Status::InvalidArgument("head analysis: the documents share no token with the prefix");
  s.ids.resize(base);
  return s;
}

}  // namespace

namespace {

// Tokens some head kept (`mask` [heads, P]), and their share of each chunk
// that holds one: into the histogram, the chunks read and the shares' sum.
void CountChunkShares(const at::Tensor& mask, int64_t chunk_tokens, HeadAnalysis* a, double* share_sum) {
  const int64_t p = mask.size(1);
  const at::Tensor kept = std::get<0>(mask.max(0)).contiguous();
  const float* kp = kept.data_ptr<float>();
  for (int64_t s = 0; s < p; s += chunk_tokens) {
    const int64_t e = std::min(p, s + chunk_tokens);
    double n = 0;
    for (int64_t t = s; t < e; ++t) n += kp[t];
    if (n == 0) continue;
    const double share = n / (e - s);
    a->histogram[std::min<int>(9, static_cast<int>(std::ceil(share * 10)) - 1)]++;
    a->chunks_read++;
    *share_sum += share;
  }
}

// The sums over documents and layers as means.
void Average(const std::vector<at::Tensor>& heat, double share_sum, HeadAnalysis* a) {
  const double n = double(a->docs) * a->layers;
  for (int l = 0; l < a->layers; ++l) {
    at::Tensor m = heat[l] / a->docs;
    const float* mp = m.contiguous().data_ptr<float>();
    a->jaccard[l].assign(mp, mp + a->heads * a->heads);
  }
  for (size_t i = 0; i < a->all_heads.size(); ++i) {
    a->all_heads[i] /= n;
    a->probe_heads[i] /= n;
  }
  a->important_share_mean = a->chunks_read ? share_sum / a->chunks_read : 0;
}

}  // namespace

StatusOr<HeadAnalysis> AnalyzeHeads(Model& model, const Tokenizer& tok, const std::string& prefix,
                                    const std::vector<Doc>& docs, const HeadAnalysisOptions& o) {
  const ModelConfig& c = model.config();
  ASSIGN_OR_RETURN(SharedPrefix shared, ShareThePrefix(tok, prefix, docs));
  std::vector<int32_t>& prefix_ids = shared.ids;
  const std::vector<std::vector<int32_t>>& contexts = shared.contexts;
  const size_t base = prefix_ids.size();
  HeadAnalysis a;
  a.layers = c.num_layers;
  a.heads = c.num_heads;
  a.prefix_tokens = static_cast<int64_t>(prefix_ids.size());
  a.jaccard.assign(a.layers, std::vector<double>(a.heads * a.heads, 0.0));
  const size_t nr = o.retentions.size();
  a.all_heads.assign(nr, 0.0);
  a.probe_heads.assign(nr, 0.0);
  a.random.assign(nr, 0.0);
  const int64_t p = a.prefix_tokens;
  for (size_t i = 0; i < nr; ++i) {
    const double f = double(RetainedTokens(o.retentions[i], p)) / p;
    a.random[i] = f / (2 - f);
  }
  std::vector<at::Tensor> heat(a.layers);
  double share_sum = 0;
  auto observe = [&](int layer, const at::Tensor& imp_in) {
    at::Tensor imp = imp_in.to(at::kCPU, at::kFloat);
    const int64_t k = RetainedTokens(o.retention, p);
    const at::Tensor mask = SetMask(TopKSets(imp, k), p);
    const at::Tensor j = MaskJaccard(mask, k);
    heat[layer] = heat[layer].defined() ? heat[layer] + j : j;
    for (size_t i = 0; i < nr; ++i) {
      const int64_t ki = RetainedTokens(o.retentions[i], p);
      const at::Tensor jr = ki == k ? j : PairwiseJaccard(imp, ki);
      a.all_heads[i] += MeanOffDiagonal(jr, a.heads);
      a.probe_heads[i] += MeanOffDiagonal(jr, std::min<int64_t>(o.probe_heads, a.heads));
    }
    CountChunkShares(mask, o.chunk_tokens, &a, &share_sum);
  };
  DenseKvCache cache(c.num_layers);
  model.Forward(prefix_ids, 0, cache);
  const DenseKvCache::Mark mark = cache.Save();
  Progress progress("head analysis", static_cast<int64_t>(contexts.size()));
  for (size_t d = 0; d < contexts.size(); ++d) {
    progress.Update(static_cast<int64_t>(d) + 1);
    if (contexts[d].size() <= base) continue;
    std::vector<int32_t> tail(contexts[d].begin() + base, contexts[d].end());
    ImportanceTap tap(cache, observe);
    model.Forward(tail, static_cast<int64_t>(base), tap);
    cache.Rewind(mark);
    a.docs++;
  }
  if (a.docs == 0) return Status::InvalidArgument("head analysis: no document kept the prefix's tokens intact");
  Average(heat, share_sum, &a);
  return a;
}

}  // namespace impress
