// Scoring chunks straight from int8 digest codes against definitions
// computed here: the dot products equal integer matrix products on either
// path; an int8 digest's codes times its scales are the keys its decode
// gives; the chunk scores are each row's softmax, its query quantized by the
// int8 key codec's rule, summed per chunk, on the host kernel and on the
// path devices take (a planted key: tests/digest_test.cc).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "codec/key_digest.h"
#include "select/digest.h"
#include "select/int8_dots.h"
#include "select/memory_source.h"

namespace impress {
namespace {

at::Tensor RandomCodes(std::vector<int64_t> shape) {
  return at::randint(-127, 128, shape, at::kLong).to(at::kChar);
}

TEST(DigestInt8Test, DotsAreTheExactIntegerProducts) {
  at::manual_seed(1);
  const int64_t p = 53, d = 24;  // not whole groups of 16 keys
  const at::Tensor k = RandomCodes({p, d});
  PackedInt8 packed;
  PackInt8Rows(k.data_ptr<int8_t>(), p, d, &packed);
  for (int64_t n = 1; n <= kInt8DotRows; ++n) {
    const at::Tensor a = RandomCodes({n, d});
    a[0].fill_(-127);  // the extremes: the unsigned offset must come off exactly
    const at::Tensor want = at::mm(a.to(at::kLong), k.to(at::kLong).t()).to(at::kInt);
    for (bool plain : {false, true}) {
      at::Tensor got = at::full({n, p + 3}, 7, at::kInt);  // a stride beyond P: the rest untouched
      (plain ? Int8DotsPlain : Int8Dots)(a.data_ptr<int8_t>(), n, packed, got.data_ptr<int32_t>(), p + 3);
      EXPECT_TRUE(got.narrow(1, 0, p).equal(want)) << "n " << n << (plain ? " plain" : "");
      EXPECT_TRUE(got.narrow(1, p, 3).eq(7).all().item<bool>());
    }
  }
}

TEST(DigestInt8Test, CodesTimesScalesAreTheDecodedKeys) {
  at::manual_seed(2);
  const int64_t c = 16, h = 3, d = 8, rows = 40;
  const at::Tensor digest = EncodeDigest(DigestCodec::kInt8, (at::randn({c, h, d}) * 2).to(at::kHalf));
  Int8Keys keys{at::zeros({h, rows, d}, at::kChar), at::zeros({h, rows}, at::kFloat)};
  SplitInt8DigestRows(digest, keys, 5, c);
  at::Tensor want = at::zeros({h, rows, d});
  DecodeDigestRows(DigestCodec::kInt8, digest, want, 5, c);
  EXPECT_TRUE((keys.codes.to(at::kFloat) * keys.scales.unsqueeze(2)).equal(want));
  EXPECT_EQ(keys.codes.narrow(1, 0, 5).abs().sum().item<int64_t>(), 0);  // rows outside untouched
}

TEST(DigestInt8Test, TheMemorySourcesCodesGiveItsDigestKeys) {
  at::manual_seed(3);
  const at::Tensor k = at::randn({2, 100, 16}), v = at::randn({2, 100, 16});  // the last chunk short
  MemorySource src(k, v, 32, DigestCodec::kInt8);
  Int8Keys keys;
  ASSERT_TRUE(src.DigestInt8(0, &keys).ok());
  at::Tensor want;
  ASSERT_TRUE(src.DigestKeys(0, &want).ok());
  EXPECT_TRUE((keys.codes.to(at::kFloat) * keys.scales.unsqueeze(2)).equal(want));
  MemorySource int4(k, v, 32, DigestCodec::kInt4);
  EXPECT_FALSE(int4.DigestInt8(0, &keys).ok());
}

// The definition, in fp64: each row (times `scale`) quantized symmetric per
// row to int8 (absmax / 127, round half to even), its logits the integer
// products times both scales over the prefix and exact over the new keys it
// may see, softmax, summed per chunk; the best row, then the group's best head.
at::Tensor Reference(const at::Tensor& q, const Int8Keys& keys, const at::Tensor& new_k, float scale, int64_t window,
                     const at::Tensor& chunk_of, int64_t n_chunks, int64_t pool) {
  const int64_t hq = q.size(0), t = q.size(1), hkv = keys.codes.size(0), p = keys.codes.size(1), g = hq / hkv;
  const int64_t w = window == 0 ? t : window;
  at::Tensor want = at::zeros({hkv, n_chunks}, at::kDouble);
  const at::Tensor prefix = keys.codes.to(at::kDouble) * keys.scales.to(at::kDouble).unsqueeze(2);
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t r = t - w; r < t; ++r) {
      const at::Tensor row = q[h][r].to(at::kFloat) * scale;
      const float s = row.abs().max().item<float>() / 127.0f;
      const at::Tensor qrow = at::round(row / s).clamp(-127, 127).to(at::kDouble) * static_cast<double>(s);
      at::Tensor logits = at::cat({at::matmul(prefix[h / g], qrow), at::matmul(new_k[h / g].to(at::kDouble), row.to(at::kDouble))});
      logits.slice(0, p + r + 1).fill_(-std::numeric_limits<double>::infinity());
      at::Tensor prob = at::softmax(logits, 0).slice(0, 0, p);
      if (pool > 1) prob = at::max_pool1d(prob.view({1, p}), {pool}, {1}, {pool / 2}).view({p});
      const at::Tensor mass = at::zeros({n_chunks}, at::kDouble).index_add_(0, chunk_of, prob);
      want[h / g] = at::maximum(want[h / g], mass);
    }
  return want.to(at::kFloat);
}

TEST(DigestInt8Test, ScoresAreEachChunksBestRowsAttention) {
  at::manual_seed(5);
  const int64_t hq = 4, hkv = 2, t = 11, p = 200, c = 8;
  // d 16 takes the host kernel (VNNI or plain); d 6 the device ops, on the host.
  for (int64_t d : {int64_t{16}, int64_t{6}}) {
    const at::Tensor q = at::randn({hq, t, d}) * 2, new_k = at::randn({hkv, t, d});
    const Int8Keys keys{RandomCodes({hkv, p, d}), at::rand({hkv, p}) * 0.05 + 0.001};
    // Contiguous chunks, and a reordered layout: chunk i holds positions i, i + 25, ...
    for (const at::Tensor& chunk_of : {at::arange(p, at::kLong).div(c, "floor"), at::arange(p, at::kLong).remainder(p / c)})
      for (int64_t window : {int64_t{0}, int64_t{3}})
        for (int64_t pool : {int64_t{1}, int64_t{3}}) {
          const at::Tensor got = DigestChunkScoresInt8(q, keys, new_k, 0.3f, window, chunk_of, p / c, pool);
          const at::Tensor want = Reference(q, keys, new_k, 0.3f, window, chunk_of, p / c, pool);
          EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-7))
              << "d " << d << " window " << window << " pool " << pool << " max diff "
              << (got - want).abs().max().item<float>();
        }
  }
}

}  // namespace
}  // namespace impress
