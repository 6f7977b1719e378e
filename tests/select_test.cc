// Importance and IMPRESS identification on constructed inputs, against the
// paper's definitions.
#include "select/importance.h"
#include "select/probe_heads.h"
#include "select/selector.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "codec/kv_codec.h"

#include <cmath>

namespace impress {
namespace {

at::Tensor Idx(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

TEST(Select, Jaccard) {
  EXPECT_DOUBLE_EQ(Jaccard(Idx({1, 2, 3}), Idx({1, 2, 3})), 1.0);
  EXPECT_DOUBLE_EQ(Jaccard(Idx({1, 2, 3}), Idx({4, 5, 6})), 0.0);
  EXPECT_DOUBLE_EQ(Jaccard(Idx({1, 2, 3, 4}), Idx({3, 4, 5, 6})), 2.0 / 6.0);
  at::Tensor sets = at::stack({Idx({0, 1}), Idx({0, 1}), Idx({0, 2})});
  // pairs: 1, 1/3, 1/3
  EXPECT_NEAR(MeanPairwiseJaccard(sets), (1.0 + 1.0 / 3 + 1.0 / 3) / 3, 1e-12);
}

TEST(Select, ThresholdFollowsTheFormula) {
  // k/n = 0.25: j = 0.25 / 1.75
  const double j = 0.25 / 1.75;
  EXPECT_DOUBLE_EQ(SimilarityThreshold(25, 100, 0.0), 1.0);  // alpha = 0: never trust the probe
  EXPECT_NEAR(SimilarityThreshold(25, 100, 0.6), std::pow(j, 0.6), 1e-12);
  EXPECT_NEAR(SimilarityThreshold(25, 100, 1.0), j, 1e-12);
  double prev = 1.0;
  for (double a : {0.3, 0.6, 1.0, 2.0}) {  // t falls as alpha grows
    double t = SimilarityThreshold(25, 100, a);
    EXPECT_LT(t, prev);
    prev = t;
  }
  // Keeping everything: j = 1, so t = 1 for every alpha.
  EXPECT_DOUBLE_EQ(SimilarityThreshold(100, 100, 0.6), 1.0);
}

TEST(Select, TopKSetsMatchTopKAndKeepTheLowerIndexAmongTies) {
  at::manual_seed(7);
  for (int64_t p : {5, 64, 2048}) {
    for (auto type : {at::kFloat, at::kDouble}) {
      const at::Tensor imp = at::rand({9, p}, at::TensorOptions().dtype(type));
      for (int64_t k : {int64_t{1}, p / 4 + 1, p}) {
        // Reference: ATen's top-k, its indices sorted (random scores have no ties).
        const at::Tensor want = std::get<0>(std::get<1>(imp.topk(k, 1)).sort(1));
        EXPECT_TRUE(TopKSets(imp, k).equal(want)) << "p " << p << " k " << k;
        // Half-precision scores tie often: the host path (float) and the
        // path for other devices and dtypes (a stable sort, here on half) agree.
        const at::Tensor half = imp.to(at::kHalf);
        EXPECT_TRUE(TopKSets(half, k).equal(TopKSets(half.to(type), k))) << "p " << p << " k " << k;
      }
    }
  }
  // Negative scores, zeros of both signs and many ties: the host path is a
  // stable descending sort's first k (equal scores, -0 and +0 included, keep
  // index order).
  for (int trial = 0; trial < 20; ++trial) {
    at::Tensor x = at::randint(-4, 5, {3, 300}).to(at::kFloat) * 0.25f;
    x.masked_fill_(x == 0, trial % 2 ? -0.0f : 0.0f);
    x.slice(1, 0, 300, 7).fill_(-0.0f);
    for (int64_t k : {int64_t{1}, int64_t{77}, int64_t{150}, int64_t{300}}) {
      const at::Tensor want =
          std::get<0>(std::get<1>(x.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true)).narrow(1, 0, k).sort(1));
      EXPECT_TRUE(TopKSets(x, k).equal(want)) << trial << " k " << k;
    }
  }
  // Ties at the k-th score: the lower indices, on both paths.
  const at::Tensor tie = at::tensor({0.5, 0.9, 0.5, 0.1, 0.5}, at::kFloat).view({1, 5});
  EXPECT_TRUE(TopKSets(tie, 2).equal(Idx({0, 1}).view({1, 2})));
  EXPECT_TRUE(TopKSets(tie, 3).equal(Idx({0, 1, 2}).view({1, 3})));
  EXPECT_TRUE(TopKSets(tie.to(at::kHalf), 3).equal(Idx({0, 1, 2}).view({1, 3})));
}

TEST(Select, SetsUnionIsTheSortedUnionAndEachRowsMask) {
  const at::Tensor sets = at::stack({Idx({0, 3}), Idx({3, 5}), Idx({1, 3})});
  at::Tensor used, mask;
  SetsUnion(sets, 7, &used, &mask);
  EXPECT_TRUE(used.equal(std::get<0>(at::_unique(sets.flatten()))));
  EXPECT_TRUE(mask.equal(at::zeros({3, 7}, at::kBool).scatter_(1, sets, true)));
}

TEST(Select, AgreedSetRanksByVotesThenScore) {
  // Three probe heads over 6 tokens, k = 2.
  at::Tensor imp = at::tensor({0.9, 0.8, 0.1, 0.0, 0.3, 0.0,     // head 0 picks {0, 1}
                               0.9, 0.0, 0.7, 0.0, 0.2, 0.0,     // head 1 picks {0, 2}
                               0.95, 0.0, 0.0, 0.0, 0.6, 0.0},   // head 2 picks {0, 4}
                              at::kFloat).view({3, 6});
  at::Tensor sets = TopKSets(imp, 2);
  EXPECT_TRUE(sets.equal(at::stack({Idx({0, 1}), Idx({0, 2}), Idx({0, 4})})));
  // Token 0 has 3 votes; 1, 2 and 4 have one each, summed scores 0.8, 0.8, 1.1: token 4 wins.
  EXPECT_TRUE(AgreedSet(sets, imp, 2).equal(Idx({0, 4})));
  // Equal votes and equal sums: the lower index wins.
  at::Tensor tie = at::tensor({1.0, 0.5, 0.5, 0.0}, at::kFloat).view({1, 4});
  at::Tensor tie_sets = at::stack({Idx({0, 1}), Idx({0, 2})});
  EXPECT_TRUE(AgreedSet(tie_sets, at::cat({tie, tie}), 2).equal(Idx({0, 1})));
}

TEST(Select, AgreedChunkTokensTakesTheBestChunksUpToK) {
  // Two probe heads over 10 tokens in chunks {0-3}, {4-7}, {8-9}; summed
  // importance per token: 0.2 0.2 0.2 0.2 | 1.0 1.0 0.5 0.5 | 1.0 1.0, per
  // chunk: 0.8, 3.0, 2.0.
  at::Tensor imp = at::tensor({0.1, 0.1, 0.1, 0.1, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5,
                               0.1, 0.1, 0.1, 0.1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
                              at::kFloat).view({2, 10});
  at::Tensor chunk_of = at::arange(10, at::kLong).div(4, "floor");
  // k = 4: the best chunk, whole.
  EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, 3, 4).equal(Idx({4, 5, 6, 7})));
  // k = 3: the best chunk would overflow; its best 3 tokens (6 and 7 tie: the lower).
  EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, 3, 3).equal(Idx({4, 5, 6})));
  // k = 6: the best chunk, then the short last one (2.0 > 0.8), whole.
  EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, 3, 6).equal(Idx({4, 5, 6, 7, 8, 9})));
  // k = 5: the best chunk, then one token of the next in rank (8 and 9 tie: the lower),
  // not the weaker first chunk even though it has room to spare.
  EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, 3, 5).equal(Idx({4, 5, 6, 7, 8})));
  // k = 7: the third chunk gives one token.
  EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, 3, 7).equal(Idx({0, 4, 5, 6, 7, 8, 9})));
  for (int64_t k = 1; k <= 10; ++k) EXPECT_EQ(AgreedChunkTokens(imp, chunk_of, 3, k).numel(), k) << k;
  // Equal chunk sums: the lower chunk wins.
  at::Tensor flat = at::ones({1, 8});
  EXPECT_TRUE(AgreedChunkTokens(flat, at::arange(8, at::kLong).div(4, "floor"), 2, 4).equal(Idx({0, 1, 2, 3})));
  // Reordered storage: a chunk holds scattered positions; they come back ascending.
  at::Tensor scattered = Idx({1, 0, 1, 0, 1, 0, 1, 0});  // chunk 1 = even positions
  at::Tensor even_heavy = at::tensor({1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 3.0, 0.0}, at::kFloat).view({1, 8});
  EXPECT_TRUE(AgreedChunkTokens(even_heavy, scattered, 2, 4).equal(Idx({0, 2, 4, 6})));
  EXPECT_TRUE(AgreedChunkTokens(even_heavy, scattered, 2, 2).equal(Idx({2, 6})));
}

TEST(Select, FallbackWhenProbeHeadsDisagree) {
  // Heads that agree exactly: similarity 1 > t for any alpha > 0.
  at::Tensor same = at::tensor({5.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, at::kFloat).repeat({3, 1});
  ItfDecision d = DecideItf(same, 2, 0.6);
  EXPECT_TRUE(d.trusted);
  EXPECT_DOUBLE_EQ(d.similarity, 1.0);
  EXPECT_TRUE(d.agreed.equal(Idx({0, 1})));
  // alpha = 0 makes t = 1: even perfect agreement is not trusted (strictly greater).
  EXPECT_FALSE(DecideItf(same, 2, 0.0).trusted);
  // Disjoint choices: similarity 0, below any threshold: fall back.
  at::Tensor apart = at::zeros({3, 8});
  apart[0][0] = apart[0][1] = 1;
  apart[1][2] = apart[1][3] = 1;
  apart[2][4] = apart[2][5] = 1;
  ItfDecision f = DecideItf(apart, 2, 0.6);
  EXPECT_FALSE(f.trusted);
  EXPECT_DOUBLE_EQ(f.similarity, 0.0);
  EXPECT_FALSE(f.agreed.defined());
}

// Importance = column sums of the true attention weights (softmax over prefix
// and the new tokens' own keys up to each row), checked against a direct
// computation; GQA heads share their KV head's keys.
TEST(Select, ImportanceIsColumnSumOfAttentionWeights) {
  at::manual_seed(3);
  const int64_t hq = 4, hkv = 2, t = 3, p = 5, d = 8;
  const float scale = 1.0f / std::sqrt(float(d));
  at::Tensor q = at::randn({hq, t, d}), pk = at::randn({hkv, p, d}), nk = at::randn({hkv, t, d});
  at::Tensor imp = PrefixImportance(q, pk, nk, scale);
  ASSERT_EQ(imp.sizes(), (at::IntArrayRef{hq, p}));
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kv = h / (hq / hkv);
    at::Tensor want = at::zeros({p});
    for (int64_t i = 0; i < t; ++i) {
      at::Tensor keys = at::cat({pk[kv], nk[kv].slice(0, 0, i + 1)});  // what row i sees
      want += at::softmax(at::mv(keys, q[h][i]) * scale, 0).slice(0, 0, p);
    }
    EXPECT_TRUE(at::allclose(imp[h], want, 1e-5, 1e-6)) << "head " << h;
  }
  EXPECT_EQ(RetainedTokens(0.25, 10), 3);
  EXPECT_EQ(RetainedTokens(1.0, 10), 10);
  EXPECT_EQ(RetainedTokens(0.0001, 10), 1);
}

// The static control's importance: every token's attention weight from each
// row at or after it, per head (row by row with softmax, as docs/paper.md's H2O
// defines accumulated attention), over more rows than one block holds.
TEST(Select, SelfImportanceIsEachTokensAttentionFromItsOwnSequence) {
  at::manual_seed(5);
  const int64_t hq = 4, hkv = 2, t = 300, d = 8;
  const float scale = 1.0f / std::sqrt(float(d));
  at::Tensor q = at::randn({hq, t, d}), k = at::randn({hkv, t, d});
  at::Tensor imp = SelfImportance(q, k, scale);
  ASSERT_EQ(imp.sizes(), (at::IntArrayRef{hq, t}));
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kv = h / (hq / hkv);
    at::Tensor want = at::zeros({t});
    for (int64_t i = 0; i < t; ++i) want.slice(0, 0, i + 1) += at::softmax(at::mv(k[kv].slice(0, 0, i + 1), q[h][i]) * scale, 0);
    EXPECT_TRUE(at::allclose(imp[h], want, 1e-4, 1e-5)) << "head " << h;
    EXPECT_NEAR(imp[h].sum().item<double>(), double(t), 1e-2);  // each row's weights sum to 1
  }
}

// The random control keeps k distinct positions per layer, reads nothing but
// them, draws the same for the same request and other ones for another
// request or layer.
TEST(Select, RandomKeepsKDrawnPositionsPerRequestAndLayer) {
  at::manual_seed(6);
  const int64_t hq = 4, hkv = 2, t = 3, p = 200, d = 8;
  SelectorOptions opt;
  opt.kind = SelectorKind::kRandom;
  opt.retention = 0.1;
  at::Tensor pk = at::randn({hkv, p, d}), pv = at::randn({hkv, p, d});
  auto select = [&](const std::vector<int32_t>& request, int layer) {
    LayerQkv qkv{layer, at::randn({hq, t, d}), at::randn({hkv, t, d}), at::randn({hkv, t, d}), 0.35f};
    return SelectFromPrefix(ForRequest(opt, request), qkv, pk, pv);
  };
  const SelectedPrefix a = select({1, 2, 3}, 0);
  EXPECT_EQ(a.kept, 20);
  ASSERT_EQ(a.used.numel(), 20);
  EXPECT_TRUE(at::equal(std::get<0>(at::_unique(a.used, /*sorted=*/true)), a.used)) << "distinct and ascending";
  EXPECT_FALSE(a.kv.keep.defined()) << "every head sees the same positions";
  EXPECT_TRUE(at::equal(a.kv.k, pk.index_select(1, a.used)));
  EXPECT_TRUE(at::equal(a.kv.v, pv.index_select(1, a.used)));
  EXPECT_TRUE(at::equal(select({1, 2, 3}, 0).used, a.used)) << "the same request draws the same";
  EXPECT_FALSE(at::equal(select({1, 2, 4}, 0).used, a.used)) << "another request draws its own";
  EXPECT_FALSE(at::equal(select({1, 2, 3}, 1).used, a.used)) << "so does another layer";
}

// The windowed importance sums the attention weights of the last W rows only,
// each row seeing what it saw causally; pooling takes each position's max over
// its pool-wide neighbourhood (SnapKV's observation window and pooling).
TEST(Select, ShapedImportanceSumsTheLastRowsAndMaxPools) {
  at::manual_seed(4);
  const int64_t hq = 4, hkv = 2, t = 6, p = 9, d = 8, w = 2, pool = 3;
  const float scale = 1.0f / std::sqrt(float(d));
  at::Tensor q = at::randn({hq, t, d}), pk = at::randn({hkv, p, d}), nk = at::randn({hkv, t, d});
  EXPECT_TRUE(ShapedImportance(q, pk, nk, scale, {}).equal(PrefixImportance(q, pk, nk, scale)));
  EXPECT_TRUE(ShapedImportance(q, pk, nk, scale, {t, 1}).equal(PrefixImportance(q, pk, nk, scale)));
  const at::Tensor windowed = ShapedImportance(q, pk, nk, scale, {w, 1});
  const at::Tensor pooled = ShapedImportance(q, pk, nk, scale, {w, pool});
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kv = h / (hq / hkv);
    at::Tensor want = at::zeros({p});
    for (int64_t i = t - w; i < t; ++i) {
      at::Tensor keys = at::cat({pk[kv], nk[kv].slice(0, 0, i + 1)});
      want += at::softmax(at::mv(keys, q[h][i]) * scale, 0).slice(0, 0, p);
    }
    EXPECT_TRUE(at::allclose(windowed[h], want, 1e-5, 1e-6)) << "head " << h;
    for (int64_t j = 0; j < p; ++j) {
      const float m = want.slice(0, std::max<int64_t>(0, j - pool / 2), std::min(p, j + pool / 2 + 1)).max().item<float>();
      EXPECT_NEAR(pooled[h][j].item<float>(), m, 1e-6) << "head " << h << " position " << j;
    }
  }
}

// Recall (Fig. 5) counts, per query head, how much of the reference head's
// set the selection keeps, from the three shapes a selection has: every
// position, one set for all heads, a set per head.
TEST(Select, RecallAgainstCountsEachHeadsShareOfTheReference) {
  const int64_t hq = 2, p = 10;
  SelectedPrefix every;
  every.total = p;
  SelectedPrefix shared;  // positions {1, 2, 3, 4} for both heads
  shared.total = p;
  shared.used = Idx({1, 2, 3, 4});
  SelectedPrefix per_head;  // head 0: {1, 5}; head 1: {5, 7}
  per_head.total = p;
  per_head.used = Idx({1, 5, 7});
  per_head.kv.keep = at::tensor(std::vector<int64_t>{1, 1, 0, 0, 1, 1}).to(at::kBool).view({hq, 3});
  const at::Tensor sets = HeadSets(per_head, hq);
  ASSERT_EQ(sets.sizes(), (at::IntArrayRef{hq, p}));
  EXPECT_TRUE(at::equal(sets[0].nonzero().flatten(), Idx({1, 5})));
  EXPECT_TRUE(at::equal(sets[1].nonzero().flatten(), Idx({5, 7})));
  EXPECT_EQ(HeadSets(every, hq).sum().item<int64_t>(), hq * p);
  EXPECT_DOUBLE_EQ(RecallAgainst(per_head, per_head, hq), 1.0);
  EXPECT_DOUBLE_EQ(RecallAgainst(every, per_head, hq), 1.0);
  // head 0 keeps 1 of {1, 5}, head 1 none of {5, 7}
  EXPECT_DOUBLE_EQ(RecallAgainst(shared, per_head, hq), (0.5 + 0.0) / 2);
  // against the shared set: head 0 keeps {1} of 4, head 1 nothing
  EXPECT_DOUBLE_EQ(RecallAgainst(per_head, shared, hq), (0.25 + 0.0) / 2);
}

// Where a selection keeps every prefix key (H2O, static), its keep mask's
// columns are positions: against itself, and a real H2O selection against
// the same selection made again, recall is exactly 1.
TEST(Select, RecallOfH2OAgainstItselfIsOne) {
  at::manual_seed(8);
  const int64_t hq = 4, hkv = 2, t = 3, p = 40, d = 8;
  SelectorOptions opt;
  opt.kind = SelectorKind::kH2O;
  opt.retention = 0.1;
  at::Tensor pk = at::randn({hkv, p, d}), pv = at::randn({hkv, p, d});
  LayerQkv qkv{0, at::randn({hq, t, d}), at::randn({hkv, t, d}), at::randn({hkv, t, d}), 0.35f};
  const SelectedPrefix a = SelectFromPrefix(opt, qkv, pk, pv);
  ASSERT_EQ(a.kv.k.size(1), p);
  ASSERT_TRUE(a.kv.keep.defined());
  const at::Tensor sets = HeadSets(a, hq);
  EXPECT_TRUE(sets.equal(a.kv.keep)) << "each head's own top-k, by position";
  EXPECT_EQ(sets.sum(1).min().item<int64_t>(), a.kept);
  EXPECT_DOUBLE_EQ(RecallAgainst(a, SelectFromPrefix(opt, qkv, pk, pv), hq), 1.0);
}

// The host implementations of the importance mask and the agreed sets are
// the tensor formulas they replace, bit for bit: the same float operations in
// the same order (the column sums add the rows in order, as at::sum does).
// The references below are those formulas; the inputs span many orders of
// magnitude so that any change of summation order shows.
at::Tensor ImportanceByTensorOps(const at::Tensor& q, const at::Tensor& prefix_k, const at::Tensor& new_k, float scale) {
  const int64_t hq = q.size(0), t = q.size(1), d = q.size(2), hkv = prefix_k.size(0), p = prefix_k.size(1);
  const int64_t g = hq / hkv;
  at::Tensor qf = (q.to(at::kFloat) * scale).reshape({hkv, g * t, d});
  at::Tensor keys = at::cat({prefix_k, new_k}, 1).to(at::kFloat);
  at::Tensor scores = at::bmm(qf, keys.transpose(1, 2)).view({hkv, g, t, p + t});
  at::Tensor future = at::arange(t, at::kLong).unsqueeze(0) > at::arange(t, at::kLong).unsqueeze(1);
  scores.slice(3, p).masked_fill_(future, -std::numeric_limits<float>::infinity());
  return at::softmax(scores, -1).slice(3, 0, p).sum(2).reshape({hq, p});
}

at::Tensor AgreedSetByTensorOps(const at::Tensor& sets, const at::Tensor& importance, int64_t k) {
  const int64_t p = importance.size(1);
  at::Tensor votes = at::zeros({p}, at::kDouble).index_add_(0, sets.flatten(), at::ones({sets.numel()}, at::kDouble));
  at::Tensor total = importance.to(at::kDouble).sum(0);
  const double big = std::max(1.0, total.max().item<double>()) * 4 + 1;
  at::Tensor key = votes * big + total;
  // Best key first, lower index among equal keys: a stable descending sort.
  at::Tensor order = std::get<1>(key.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true)).narrow(0, 0, k);
  return std::get<0>(order.sort());
}

at::Tensor AgreedChunkTokensByTensorOps(const at::Tensor& importance, const at::Tensor& chunk_of, int64_t n_chunks,
                                        int64_t k) {
  at::Tensor total = importance.to(at::kDouble).sum(0);
  at::Tensor score = at::zeros({n_chunks}, at::kDouble).index_add_(0, chunk_of, total);
  at::Tensor order = std::get<1>(score.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n_chunks && static_cast<int64_t>(kept.size()) < k; ++i) {
    at::Tensor members = at::nonzero(chunk_of == order[i]).flatten();  // ascending
    const int64_t room = k - static_cast<int64_t>(kept.size());
    if (members.numel() > room)  // its best tokens, lower position among ties
      members = members.index_select(
          0, std::get<1>(total.index_select(0, members).sort(/*stable=*/true, /*dim=*/0, /*descending=*/true)));
    for (int64_t j = 0; j < std::min<int64_t>(room, members.numel()); ++j) kept.push_back(members[j].item<int64_t>());
  }
  std::sort(kept.begin(), kept.end());
  return at::tensor(kept, at::kLong);
}

TEST(Select, HostDecisionsAreTheTensorFormulasBitForBit) {
  at::manual_seed(11);
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t h = 2 + trial % 3, p = 300 + 37 * trial, chunk = 16, n_chunks = (p + chunk - 1) / chunk;
    // Importance over ~30 binary orders of magnitude, some exact ties.
    at::Tensor imp = (at::rand({h, p}) * at::exp(at::randn({h, p}) * 8)).to(at::kFloat);
    imp.slice(1, 0, 10).fill_(0.5f);
    // Reordered storage: the chunks hold a random permutation of the positions.
    at::Tensor chunk_of = at::randperm(p, at::kLong).div(chunk, "floor");
    for (int64_t k : {int64_t{1}, p / 4, p / 2 + 3, p}) {
      at::Tensor sets = TopKSets(imp, k);
      EXPECT_TRUE(AgreedSet(sets, imp, k).equal(AgreedSetByTensorOps(sets, imp, k))) << trial << " k " << k;
      double pairs_sum = 0;  // the mean over pairs, each pair by Jaccard's merge of sorted lists
      for (int64_t a = 0; a < h; ++a)
        for (int64_t b = a + 1; b < h; ++b) pairs_sum += Jaccard(sets[a], sets[b]);
      EXPECT_EQ(MeanPairwiseJaccard(sets), pairs_sum / (h * (h - 1) / 2)) << trial << " k " << k;
      EXPECT_TRUE(AgreedChunkTokens(imp, chunk_of, n_chunks, k)
                      .equal(AgreedChunkTokensByTensorOps(imp, chunk_of, n_chunks, k)))
          << trial << " k " << k;
    }
  }
  // Shapes of the probe heads (one KV head) and of H2O (all three) at the
  // prefix lengths the runs use, odd sizes included; queries as a view.
  for (int64_t hkv : {1, 3})
    for (int64_t p : {200, 1000, 2016, 2049, 7911})
      for (int64_t t : {1, 2, 17, 39, 59, 64, 130}) {
        const int64_t hq = 3 * hkv, d = 64;
        at::Tensor q = at::randn({t, hq, d}).transpose(0, 1), pk = at::randn({hkv, p, d}) * 3,
                   nk = at::randn({hkv, t, d});
        const at::Tensor want = ImportanceByTensorOps(q, pk, nk, 0.125f);
        EXPECT_TRUE(PrefixImportance(q, pk, nk, 0.125f).equal(want)) << hkv << " " << p << " " << t;
        // The keys with room for the new ones after each head's, as a store source hands them out.
        at::Tensor roomy = at::full({hkv, p + t, d}, 7.0f).narrow(1, 0, p);
        roomy.copy_(pk);
        EXPECT_TRUE(PrefixImportance(q, roomy, nk, 0.125f, t).equal(want)) << "room " << hkv << " " << p << " " << t;
        EXPECT_TRUE(roomy.equal(pk));
        EXPECT_TRUE(roomy.as_strided({hkv, t, d}, {(p + t) * d, d, 1}, p * d).equal(nk));  // the room holds new_k
      }
}

}  // namespace
}  // namespace impress

// Selection inside a real model (tiny GQA Llama): retention 1.0 under h2o and
// impress-itf reproduces full reuse exactly; lower retention changes scores.
#include "eval/scorer.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "test_util.h"

namespace impress {
namespace {

TEST(Select, ProbeLayouts) {
  using H = std::vector<int64_t>;
  // Multi-head (g = 1): both layouts probe heads 0, 1, 2, reading 3 KV heads.
  for (ProbeLayout l : {ProbeLayout::kFirst, ProbeLayout::kSpread}) EXPECT_EQ(ProbeQueryHeads(3, 32, 32, l), (H{0, 1, 2}));
  EXPECT_EQ(ProbeKvHeads({0, 1, 2}, 32, 32), 3);
  // SmolLM2 (9 query heads on 3 KV heads): the first heads share KV head 0.
  EXPECT_EQ(ProbeQueryHeads(3, 9, 3, ProbeLayout::kFirst), (H{0, 1, 2}));
  EXPECT_EQ(ProbeKvHeads({0, 1, 2}, 9, 3), 1);
  EXPECT_EQ(ProbeQueryHeads(3, 9, 3, ProbeLayout::kSpread), (H{0, 3, 6}));
  EXPECT_EQ(ProbeKvHeads({0, 3, 6}, 9, 3), 3);
  // Llama-3-8B-like (32 on 8): 3 of the 8 KV heads.
  EXPECT_EQ(ProbeQueryHeads(3, 32, 8, ProbeLayout::kSpread), (H{0, 4, 8}));
  EXPECT_EQ(ProbeKvHeads({0, 4, 8}, 32, 8), 3);
  // Fewer KV heads than probes: wrap to the next head of each group.
  EXPECT_EQ(ProbeQueryHeads(3, 8, 2, ProbeLayout::kSpread), (H{0, 4, 1}));
  EXPECT_EQ(ProbeKvHeads({0, 4, 1}, 8, 2), 2);
  EXPECT_EQ(ProbeQueryHeads(3, 4, 1, ProbeLayout::kSpread), (H{0, 1, 2}));  // one KV head
  EXPECT_EQ(ProbeQueryHeads(3, 2, 1, ProbeLayout::kSpread), (H{0, 1}));     // fewer heads than probes
  EXPECT_FALSE(ParseProbeLayout("middle").ok());
}

// Each row of ProbeImportance is the probe head's own importance against its
// own KV head's keys, in either layout.
TEST(Select, ProbeImportanceRowsAreTheProbeHeads) {
  at::manual_seed(5);
  const int64_t hq = 8, hkv = 2, t = 3, p = 6, d = 8;
  LayerQkv qkv{0, at::randn({hq, t, d}), at::randn({hkv, t, d}), at::randn({hkv, t, d}), 0.3f};
  at::Tensor pk = at::randn({hkv, p, d});
  at::Tensor all = PrefixImportance(qkv.q, pk, qkv.k, qkv.scale);  // [hq, p]
  for (ProbeLayout l : {ProbeLayout::kFirst, ProbeLayout::kSpread}) {
    SelectorOptions o;
    o.probe_layout = l;
    const std::vector<int64_t> heads = ProbeQueryHeads(3, hq, hkv, l);
    at::Tensor imp = ProbeImportance(o, qkv, pk.slice(0, 0, ProbeKvHeads(heads, hq, hkv)));
    ASSERT_EQ(imp.sizes(), (at::IntArrayRef{3, p}));
    for (size_t i = 0; i < heads.size(); ++i)
      EXPECT_TRUE(at::allclose(imp[i], all[heads[i]], 1e-5, 1e-6)) << "probe " << i << " (head " << heads[i] << ")";
  }
}

TEST(Select, RetentionOneEqualsFullReuse) {
  auto manifest = testing::FixtureManifest();
  const std::string dir = manifest["models"]["tiny-llama-gqa"];
  auto model = LoadModel(dir, LoadOptions{testing::TestDevice(), "float32"});
  auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(model.ok() && tok.ok());
  std::string prefix;
  for (int i = 0; i < 12; ++i) prefix += "Question: example number " + std::to_string(i) + "?\nAnswer: yes\n\n";
  Doc doc{"Question: is this the query?\nAnswer:", {"yes it is", "no", "maybe later"}, 0};
  auto score = [&](SelectorOptions opt) {
    Scorer s(**model, **tok, opt);
    EXPECT_TRUE(s.SetPrefix(prefix).ok());
    auto r = s.Score(doc);
    EXPECT_TRUE(r.ok());
    return std::make_pair(r->loglik, s.selection());
  };
  auto [full, full_sel] = score({});
  for (SelectorKind kind : {SelectorKind::kH2O, SelectorKind::kItf}) {
    auto [ll, sel] = score({kind, 1.0, 0.6, 3});
    EXPECT_EQ(ll, full) << "retention 1.0 must equal full reuse exactly";
    EXPECT_DOUBLE_EQ(sel.KeptShare(), 1.0);
  }
  auto [h2o, h2o_sel] = score({SelectorKind::kH2O, 0.25, 0.6, 3});
  EXPECT_NE(h2o, full);
  EXPECT_NEAR(h2o_sel.KeptShare(), 0.25, 0.01);
  auto [itf, itf_sel] = score({SelectorKind::kItf, 0.25, 0.6, 3});
  EXPECT_NE(itf, full);
  int64_t probes = 0;
  for (int64_t p : itf_sel.probes) probes += p;
  EXPECT_EQ(probes, (*model)->config().num_layers);  // one probe test per layer of the document
  // alpha = 0: never trusted, so IMPRESS is exactly H2O.
  auto [never, never_sel] = score({SelectorKind::kItf, 0.25, 0.0, 3});
  EXPECT_EQ(never, h2o);
  EXPECT_DOUBLE_EQ(never_sel.FallbackShare(), 1.0);
  // The chunk unit, probe heads always trusted (a huge alpha puts t near 0;
  // this random model's heads rarely pass at 0.6), keeps exactly k tokens
  // packed into 8-token chunks on every layer, and gives a different answer
  // than the token unit.
  auto [trusted, trusted_sel] = score({SelectorKind::kItf, 0.25, 1000, 3});
  EXPECT_DOUBLE_EQ(trusted_sel.FallbackShare(), 0.0);
  SelectorOptions chunked{SelectorKind::kItf, 0.25, 1000, 3, ItfUnit::kChunk, 8};
  auto [chunk_ll, chunk_sel] = score(chunked);
  EXPECT_NE(chunk_ll, trusted);
  EXPECT_DOUBLE_EQ(chunk_sel.FallbackShare(), 0.0);
  for (size_t l = 0; l < chunk_sel.kept.size(); ++l) {
    const int64_t total = chunk_sel.total[l], kept = chunk_sel.kept[l];
    const int64_t k = RetainedTokens(0.25, total);
    EXPECT_EQ(kept, k) << "layer " << l;
  }
  // At retention 1.0 the chunk unit is full reuse exactly too.
  chunked.retention = 1.0;
  auto [whole, whole_sel] = score(chunked);
  EXPECT_DOUBLE_EQ(whole_sel.KeptShare(), 1.0);
  EXPECT_EQ(whole, full);
}

// Documents share different lengths of the prefix's tokens (a document that
// starts with newlines keeps the prefix's last token whole; one that starts
// with a word splits it): a document sharing more than the one before must
// get the prefix's KV there, not the earlier document's.
TEST(Scorer, DocumentsThatSplitThePrefixEarlierDoNotLeakKv) {
  auto manifest = testing::FixtureManifest();
  // GPT-2 BPE (OPT): "\n\n" ends the prefix as one token but splits in two before a word.
  const std::string dir = manifest["models"]["tiny-opt-preln"];
  auto model = LoadModel(dir, LoadOptions{testing::TestDevice(), "float32"});
  auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(model.ok() && tok.ok());
  const std::string prefix = "Question: what is water?\nAnswer: wet\n\n";
  Doc plain{"Question: is this the query?\nAnswer:", {"yes", "no"}, 0};
  Doc merging{"\n\n\nQuestion: and this one?\nAnswer:", {"yes", "no"}, 0};
  auto fresh = [&](const Doc& d) {
    Scorer s(**model, **tok);
    EXPECT_TRUE(s.SetPrefix(prefix).ok());
    return s.Score(d)->loglik;
  };
  Scorer s(**model, **tok);
  ASSERT_TRUE(s.SetPrefix(prefix).ok());
  EXPECT_EQ(s.Score(plain)->loglik, fresh(plain));
  EXPECT_EQ(s.Score(merging)->loglik, fresh(merging));
  EXPECT_EQ(s.Score(plain)->loglik, fresh(plain));
}


// A codec makes the prefix's whole chunks what a store with it serves: a
// prefix shorter than a chunk is untouched, one whole chunk is int8 under
// both codecs (int4 keeps the first chunk, the attention sinks, at int8),
// more chunks tell the codecs apart; and a document that restores part of
// the prefix gets the same numbers as a fresh scorer (the restored chunks are
// encoded again, a chunk cut short is recomputed).
TEST(Scorer, ACodecServesThePrefixAsAStoreWould) {
  auto manifest = testing::FixtureManifest();
  const std::string dir = manifest["models"]["tiny-opt-preln"];
  auto model = LoadModel(dir, LoadOptions{testing::TestDevice(), "float32"});
  auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(model.ok() && tok.ok());
  SelectorOptions opt;
  opt.chunk_tokens = 16;
  Doc plain{"Question: is this the query?\nAnswer:", {"yes", "no"}, 0};
  Doc merging{"\n\n\nQuestion: and this one?\nAnswer:", {"yes", "no"}, 0};
  auto fresh = [&](const std::string& prefix, KvCodec c, const Doc& d) {
    Scorer s(**model, **tok, opt, c);
    EXPECT_TRUE(s.SetPrefix(prefix).ok());
    return s.Score(d)->loglik;
  };
  auto tokens = [&](const std::string& text) { return (*tok)->Encode(text, false)->size(); };
  const std::string shorter = "Question: water?\nAnswer: wet\n\n";
  ASSERT_LT(tokens(shorter), 16u);
  EXPECT_EQ(fresh(shorter, KvCodec::kInt4, plain), fresh(shorter, KvCodec::kNone, plain));
  std::string one = shorter;
  while (tokens(one) < 20) one += "More: words here\n";
  ASSERT_LT(tokens(one), 32u);
  EXPECT_NE(fresh(one, KvCodec::kInt8, plain), fresh(one, KvCodec::kNone, plain));
  EXPECT_EQ(fresh(one, KvCodec::kInt4, plain), fresh(one, KvCodec::kInt8, plain));
  std::string many = one;
  for (int i = 0; i < 8; ++i) many += "Question: what is example " + std::to_string(i) + "?\nAnswer: a thing\n\n";
  ASSERT_GT(tokens(many), 64u);
  EXPECT_NE(fresh(many, KvCodec::kInt4, plain), fresh(many, KvCodec::kInt8, plain));
  for (KvCodec c : {KvCodec::kInt8, KvCodec::kInt4}) {
    Scorer s(**model, **tok, opt, c);
    ASSERT_TRUE(s.SetPrefix(many).ok());
    EXPECT_EQ(s.Score(plain)->loglik, fresh(many, c, plain)) << KvCodecName(c);
    EXPECT_EQ(s.Score(merging)->loglik, fresh(many, c, merging)) << KvCodecName(c);
    EXPECT_EQ(s.Score(plain)->loglik, fresh(many, c, plain)) << KvCodecName(c);
  }
}

}  // namespace
}  // namespace impress
