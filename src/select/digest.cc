// The project's own selection (docs/systems.md, "digest"): each layer scores
// the prefix's chunks from their key digests (codec/key_digest.h) with the
// new tokens' own queries (by default each query row's attention over the
// digest's keys summed per chunk, a chunk's best row's, the best over each
// KV group's query heads: select/digest.h's DigestScore), orders them over
// the groups and keeps whole chunks, the sink's and the recent tokens'
// first, until k tokens are kept; it reads the chosen chunks' K and V and
// nothing else. The first `dense_layers` layers keep every token.
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "select/digest.h"
#include "select/importance.h"
#include "select/method.h"

namespace impress {

at::Tensor DigestChunkOrder(const at::Tensor& scores, DigestGroups how) {
  const at::Tensor s = scores.to(at::kCPU, at::kFloat);
  const int64_t c = s.size(1);
  const at::Tensor share = s / s.sum(1, true).clamp_min(1e-30);  // each group's scores as shares of its total
  // kSum: the shares summed over the groups. kRank: a chunk's best rank in any group.
  const at::Tensor key = how == DigestGroups::kSum ? share.sum(0) : std::get<0>(share.max(0));
  at::Tensor best_rank = at::zeros({c}, at::kLong);
  if (how == DigestGroups::kRank) {
    const at::Tensor order = std::get<1>(s.sort(/*stable=*/true, 1, /*descending=*/true));
    const at::Tensor ranks = at::arange(c, at::kLong).expand_as(order).contiguous();
    best_rank = std::get<0>(at::empty_like(order).scatter_(1, order, ranks).min(0));
  }
  std::vector<int64_t> ids(static_cast<size_t>(c));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  const int64_t* r = best_rank.data_ptr<int64_t>();
  const at::Tensor kc = key.contiguous();
  const float* v = kc.data_ptr<float>();
  std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return r[a] != r[b] ? r[a] < r[b] : v[a] > v[b]; });
  return at::tensor(ids, at::kLong);
}

at::Tensor DigestKeptPositions(const at::Tensor& order, const at::Tensor& chunk_of, int64_t n_chunks, int64_t k,
                               int64_t sink, int64_t recent) {
  const at::Tensor of = chunk_of.to(at::kCPU, at::kLong).contiguous();
  const int64_t p = of.numel();
  const int64_t* ofp = of.data_ptr<int64_t>();
  std::vector<int64_t> size(static_cast<size_t>(n_chunks), 0);
  for (int64_t i = 0; i < p; ++i) ++size[static_cast<size_t>(ofp[i])];
  std::vector<char> take(static_cast<size_t>(n_chunks), 0);
  int64_t kept = 0;
  auto add = [&](int64_t c) {
    if (!take[static_cast<size_t>(c)]) take[static_cast<size_t>(c)] = 1, kept += size[static_cast<size_t>(c)];
  };
  for (int64_t i = 0; i < std::min(sink, p); ++i) add(ofp[i]);
  for (int64_t i = std::max<int64_t>(0, p - recent); i < p; ++i) add(ofp[i]);
  const int64_t* o = order.data_ptr<int64_t>();
  for (int64_t i = 0; i < order.numel() && kept < k; ++i) add(o[i]);
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(kept));
  for (int64_t i = 0; i < p; ++i)
    if (take[static_cast<size_t>(ofp[i])]) pos.push_back(i);
  return at::tensor(pos, at::kLong);
}

namespace {

class DigestMethod final : public SelectionMethod {
 public:
  explicit DigestMethod(const SelectorOptions& opt) : opt_(opt) {}

  // The digests are resident: no chunk part is read before the queries
  // exist, except where every token is kept (k covering P); int8 digests
  // scored from their codes are put together ahead. Dense layers read
  // theirs on demand.
  ReadAhead Ahead(int64_t p) const override {
    if (RetainedTokens(opt_.retention, p) >= p) return ReadAhead::kAll;
    return FromCodes() ? ReadAhead::kDigests : ReadAhead::kNone;
  }

  StatusOr<SelectedPrefix> Select(const LayerQkv& qkv, PrefixSource& src, SelectionObserver* obs) const override {
    IMPRESS_CHECK(!qkv.attend_new.defined());  // importance reads the rows as one causal sequence
    const int l = qkv.layer;
    const int64_t p = src.tokens();
    const int64_t k = p > 0 ? RetainedTokens(opt_.retention, p) : 0;
    if (p == 0 || k >= p || l < opt_.digest.dense_layers) return SelectAll(qkv, src);
    const at::Tensor chunk_of = src.ChunkOf(l);
    at::Tensor scores;
    if (FromCodes()) {
      Int8Keys keys;  // scored from the codes as they are stored
      RETURN_IF_ERROR(src.DigestInt8(l, &keys));
      scores = DigestChunkScoresInt8(qkv.q, keys, qkv.k, qkv.scale, opt_.digest.window, chunk_of, src.chunks(),
                                     opt_.digest.pool);
    } else {
      at::Tensor digest_keys;
      RETURN_IF_ERROR(src.DigestKeys(l, &digest_keys));
      scores = DigestChunkScores(qkv.q, digest_keys, qkv.k, qkv.scale, opt_.digest.window, chunk_of, src.chunks(),
                                 opt_.digest.score, src.key_room(), opt_.digest.pool);
    }
    scores = ReadBack(scores, l, obs);
    if (obs != nullptr) obs->OnStepEnd(l, SelectStep::kImportance);
    SelectedPrefix s;
    s.used = DigestKeptPositions(DigestChunkOrder(scores, opt_.digest.groups), chunk_of, src.chunks(), k,
                                 opt_.digest.sink_tokens, opt_.digest.recent_tokens);
    if (obs != nullptr) obs->OnStepEnd(l, SelectStep::kDecision);
    RETURN_IF_ERROR(src.Gather(l, s.used, &s.kv.k, &s.kv.v));
    s.total = p;
    s.kept = s.used.numel();
    return s;
  }

 private:
  // Scores from the int8 codes as they are stored (PrefixSource::DigestInt8).
  bool FromCodes() const { return opt_.digest.score == DigestScore::kRowMax && opt_.digest.codec == DigestCodec::kInt8; }

  const SelectorOptions opt_;
};

}  // namespace

std::unique_ptr<SelectionMethod> MakeDigestMethod(const SelectorOptions& opt) {
  return std::make_unique<DigestMethod>(opt);
}

}  // namespace impress
