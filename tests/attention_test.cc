// Attention of new tokens over [prefix ; own] KV against its definition,
// computed here in double precision: scores q.k times the scale, hidden
// prefix columns (keep) and later new tokens at -inf, a softmax per row,
// the weighted sum of values. The fused CPU kernel (model/attention_cpu.h)
// across head sizes, query counts that are and are not whole row blocks,
// prefixes that are and are not whole key tiles, grouped query heads, keep
// masks that hide a head's whole first tile, and scores large enough that
// each tile moves a row's running max.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "model/attention.h"
#include "model/attention_cpu.h"

namespace impress {
namespace {

// The definition, in double: [T, Hq * d].
at::Tensor Reference(const LayerQkv& x, const PrefixKv& prefix) {
  const int64_t hq = x.q.size(0), t = x.q.size(1), d = x.q.size(2), g = hq / x.k.size(0);
  const int64_t p = prefix.k.defined() ? prefix.k.size(1) : 0;
  const at::Tensor k = (p > 0 ? at::cat({prefix.k, x.k}, 1) : x.k).to(at::kDouble).repeat_interleave(g, 0);
  const at::Tensor v = (p > 0 ? at::cat({prefix.v, x.v}, 1) : x.v).to(at::kDouble).repeat_interleave(g, 0);
  at::Tensor scores = at::matmul(x.q.to(at::kDouble), k.transpose(1, 2)) * static_cast<double>(x.scale);  // [Hq, T, P+T]
  at::Tensor visible = at::ones({hq, t, p + t}, at::kBool);
  visible.narrow(2, p, t).copy_(at::ones({t, t}, at::kBool).tril().expand({hq, t, t}));
  if (p > 0 && prefix.keep.defined()) visible.narrow(2, 0, p).copy_(prefix.keep.unsqueeze(1).expand({hq, t, p}));
  scores.masked_fill_(visible.logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), v).transpose(0, 1).reshape({t, hq * d});
}

struct Shape {
  int64_t hq, hkv, d, t, p;
  bool keep;
  float q_scale;  // large: scores spread over tens of units, so later tiles raise a row's max
};

class AttentionTest : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionTest, FusedCpuKernelMatchesTheDefinition) {
  const Shape s = GetParam();
  at::manual_seed(static_cast<uint64_t>(s.d * 1000 + s.t * 10 + s.p));
  LayerQkv x;
  x.q = at::randn({s.hq, s.t, s.d}) * s.q_scale;
  x.k = at::randn({s.hkv, s.t, s.d});
  x.v = at::randn({s.hkv, s.t, s.d});
  x.scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  PrefixKv prefix;
  if (s.p > 0) {
    prefix.k = at::randn({s.hkv, s.p, s.d});
    prefix.v = at::randn({s.hkv, s.p, s.d});
    if (s.keep) {
      prefix.keep = at::rand({s.hq, s.p}) < 0.6;
      prefix.keep[0].narrow(0, 0, std::min<int64_t>(s.p, 64)).fill_(false);  // head 0: its first tile hidden
      prefix.keep[s.hq - 1].fill_(false);                                     // the last head: the whole prefix
    }
  }
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the fused CPU kernel needs AVX-512F";
  at::Tensor fused;
  ASSERT_TRUE(AttendCpu(x, prefix, &fused));
  const at::Tensor want = Reference(x, prefix);
  ASSERT_EQ(fused.sizes(), want.sizes());
  // As close to the definition as the path from LibTorch's kernels on the
  // same inputs (the error scales with the scores' size, rounded in fp32 by both).
  const at::Tensor libtorch = AttendLibTorch(x, prefix);
  const double err = (fused.to(at::kDouble) - want).abs().max().item<double>();
  const double libtorch_err = (libtorch.to(at::kDouble) - want).abs().max().item<double>();
  EXPECT_LE(err, 2 * libtorch_err) << "LibTorch's error " << libtorch_err;
  // Attend takes the kernel where it applies.
  EXPECT_TRUE(Attend(x, prefix).equal(fused));
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(Shape{9, 3, 64, 80, 2048 - 13, false, 1.0f},  // a digest request at 8K, 25%
                                           Shape{9, 3, 64, 80, 300, true, 1.0f},        // an H2O union with its mask
                                           Shape{4, 4, 16, 1, 65, true, 1.0f},          // one query, MHA
                                           Shape{8, 2, 32, 33, 64, false, 1.0f},        // whole tiles, 2 row blocks
                                           Shape{4, 1, 128, 70, 0, false, 1.0f},        // no prefix: causal only
                                           Shape{6, 2, 64, 130, 190, true, 8.0f},       // scores over tens of units
                                           Shape{2, 1, 64, 5, 700, false, 8.0f}));

TEST(AttentionTest, OtherShapesAndTypesAreLeftToTheGeneralPath) {
  LayerQkv x;
  x.q = at::randn({2, 3, 8});  // head_dim 8: no kernel
  x.k = at::randn({2, 3, 8});
  x.v = at::randn({2, 3, 8});
  at::Tensor out;
  EXPECT_FALSE(AttendCpu(x, PrefixKv{}, &out));
  EXPECT_FALSE(out.defined());
  x.q = at::randn({2, 3, 64}, at::kDouble);
  x.k = at::randn({2, 3, 64}, at::kDouble);
  x.v = at::randn({2, 3, 64}, at::kDouble);
  EXPECT_FALSE(AttendCpu(x, PrefixKv{}, &out));
  x.q = x.q.to(at::kFloat), x.k = x.k.to(at::kFloat), x.v = x.v.to(at::kFloat);
  x.attend_new = at::ones({3, 3}, at::kBool);  // segments: the general path's mask
  EXPECT_FALSE(AttendCpu(x, PrefixKv{}, &out));
}

}  // namespace
}  // namespace impress
