// kRowMax's chunk scores straight from an int8 digest's codes
// (select/digest.h, DigestChunkScoresInt8): the query rows quantized as the
// digest's keys are, integer dot products, and on the host one pass per row
// that turns them into the row's attention summed per chunk.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "select/chunk_mass.h"
#include "select/digest.h"
#include "select/importance.h"
#include "select/int8_dots.h"

// The 16-lane helpers below pass 512-bit vectors by value; they are inlined
// into RowChunkMass's clones, so no call crosses the ABI GCC warns about.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace impress {
namespace {

// 16 floats (GCC's vector extension: each clone of RowChunkMass lowers it
// to its own vector unit) and 16 int32s.
typedef float Lanes __attribute__((vector_size(64)));
typedef int32_t IntLanes __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

inline Lanes LoadLanes(const float* x) {
  Lanes v;
  std::memcpy(&v, x, sizeof v);
  return v;
}

inline Lanes LoadIntLanes(const int32_t* x) {
  IntLanes v;
  std::memcpy(&v, x, sizeof v);
  return __builtin_convertvector(v, Lanes);
}

// e^x for x <= 0 (0 below -87, where fp32 runs out), within 2 ulp: Cephes'
// expf: x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial in r, then
// 2^n by the exponent bits; n rounded by adding and taking off 1.5 * 2^23.
// One formula for a float and for 16 lanes.
template <typename F, typename I>
inline F ExpNonPositive(F x) {
  const F under = x < -87.0f ? F{} + 0.0f : F{} + 1.0f;
  x = x < -87.0f ? F{} - 87.0f : x;
  const F n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  I bits;
  if constexpr (std::is_same_v<F, float>) {
    bits = (static_cast<int32_t>(n) + 127) << 23;
  } else {
    bits = (__builtin_convertvector(n, I) + 127) << 23;
  }
  F two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return p * two_n * under;
}

inline float Exp1(float x) { return ExpNonPositive<float, int32_t>(x); }
inline Lanes Exp16(Lanes x) { return ExpNonPositive<Lanes, IntLanes>(x); }

// Sum of e^(x - m) over x[0, n), lanes first, then the tail.
inline float ExpSum(const float* x, int64_t n, float m) {
  Lanes acc = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) acc += Exp16(LoadLanes(x + j) - m);
  float s = 0;
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  for (; j < n; ++j) s += Exp1(x[j] - m);
  return s;
}

// One query row: `dots` [P] its integer dot products with the digest's
// codes, `key_scale` [P] the keys' scales, `row_scale` the row's (times the
// softmax scale), `news` [T] its exact scores over the new keys (-inf where
// masked). Adds the row's attention summed per chunk to `mass` [C] (zeroed);
// `buf` and `pooled` [P] scratch. The clones let one build run the widest
// vector unit the machine has.
__attribute__((target_clones("avx512f", "avx2", "default")))
void RowChunkMass(const int32_t* dots, const float* key_scale, float row_scale, const float* news, int64_t t,
                  int64_t p, int64_t pool, const ChunkRuns& runs, float* buf, float* pooled, float* mass,
                  int64_t n_chunks) {
  const float lo = -std::numeric_limits<float>::infinity();
  Lanes top = {lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo};
  int64_t j = 0;
  for (; j + kLanes <= p; j += kLanes) {
    const Lanes v = row_scale * (LoadLanes(key_scale + j) * LoadIntLanes(dots + j));
    std::memcpy(buf + j, &v, sizeof v);
    top = top > v ? top : v;
  }
  float m = lo;
  for (; j < p; ++j) m = std::max(m, buf[j] = row_scale * (key_scale[j] * static_cast<float>(dots[j])));
  for (int k = 0; k < kLanes; ++k) m = std::max(m, top[k]);
  for (int64_t i = 0; i < t; ++i) m = std::max(m, news[i]);
  float den = 0;
  for (int64_t i = 0; i < t; ++i) den += Exp1(news[i] - m);
  if (pool <= 1) {  // each run's exponentials summed as they are made
    for (size_t r = 0; r + 1 < runs.start.size(); ++r) {
      const float s = ExpSum(buf + runs.start[r], runs.start[r + 1] - runs.start[r], m);
      mass[runs.chunk[r]] += s;
      den += s;
    }
  } else {  // each position's the max over its window (max_pool1d's, shrinking at the ends)
    for (j = 0; j < p; ++j) den += (buf[j] = Exp1(buf[j] - m));
    const int64_t half = pool / 2;
    for (j = 0; j < p; ++j) {
      float v = buf[j];
      for (int64_t i = std::max<int64_t>(0, j - half); i <= std::min(p - 1, j + half); ++i) v = std::max(v, buf[i]);
      pooled[j] = v;
    }
    for (size_t r = 0; r + 1 < runs.start.size(); ++r)
      for (j = runs.start[r]; j < runs.start[r + 1]; ++j) mass[runs.chunk[r]] += pooled[j];
  }
  const float inv = 1.0f / den;
  for (int64_t c = 0; c < n_chunks; ++c) mass[c] *= inv;
}

// Each row of `x` [R, d] (fp32) as int8 codes [R, d] and scales [R]: the
// int8 key codec's rule (symmetric, absmax / 127 per row), in fp32; a row
// of zeros is codes 0 with scale 0.
void QuantizeRows(const at::Tensor& x, at::Tensor* codes, at::Tensor* scales) {
  *scales = x.abs().amax(1) / 127.0f;
  const at::Tensor safe = at::where(*scales > 0, *scales, at::ones_like(*scales));
  *codes = at::round(x / safe.unsqueeze(1)).clamp_(-127, 127).to(at::kChar);
}

}  // namespace

at::Tensor DigestChunkScoresInt8(const at::Tensor& q, const Int8Keys& keys, const at::Tensor& new_k, float scale,
                                 int64_t window, const at::Tensor& chunk_of, int64_t n_chunks, int64_t pool) {
  const int64_t hq = q.size(0), t = q.size(1), hkv = keys.codes.size(0), p = keys.codes.size(1),
                d = keys.codes.size(2), g = hq / hkv;
  IMPRESS_CHECK(hq % hkv == 0 && chunk_of.numel() == p && keys.scales.size(1) == p);
  const int64_t w = window > 0 && window < t ? window : t, first_row = t - w;
  const at::Tensor qf = (q.narrow(1, first_row, w).to(at::kFloat) * scale).reshape({hkv, g * w, d});
  const at::Tensor sn = NewKeyScores(qf, new_k, g, w, first_row);  // the new keys are exact
  at::Tensor row_codes, row_scales;
  QuantizeRows(qf.reshape({hkv * g * w, d}), &row_codes, &row_scales);
  row_codes = row_codes.view({hkv, g * w, d});
  row_scales = row_scales.view({hkv, g * w});
  at::Tensor mass;  // [Hkv, G*W, C]
  if (q.is_cpu() && d % 4 == 0 && d <= kMaxInt8Dim) {
    // Blocks of a head's rows: their exact dot products while they sit in a
    // core's cache, then one pass per row.
    constexpr int64_t kBlock = kInt8DotRows;
    const int64_t gw = g * w, blocks = (gw + kBlock - 1) / kBlock;
    const at::Tensor ks = keys.scales.to(at::kFloat).contiguous(), rs = row_scales.contiguous(),
                     news = sn.contiguous(), codes = row_codes.contiguous(), kc = keys.codes.contiguous();
    // Scratch kept by each thread from layer to layer: no allocation per layer.
    // The lambdas below run on other threads: they see the caller's packed
    // keys through this reference (a thread_local named there is their own).
    thread_local std::vector<PackedInt8> caller_packed;
    std::vector<PackedInt8>& packed = caller_packed;
    packed.resize(static_cast<size_t>(hkv));
    at::parallel_for(0, hkv, 1, [&](int64_t h0, int64_t h1) {
      for (int64_t h = h0; h < h1; ++h) PackInt8Rows(kc.data_ptr<int8_t>() + h * p * d, p, d, &packed[static_cast<size_t>(h)]);
    });
    mass = at::zeros({hkv, gw, n_chunks}, at::kFloat);
    const ChunkRuns runs = RunsOf(chunk_of);
    at::parallel_for(0, hkv * blocks, 1, [&](int64_t u0, int64_t u1) {
      thread_local std::vector<int32_t> dots;
      thread_local std::vector<float> buf, pooled;
      dots.resize(static_cast<size_t>(kBlock * p));
      buf.resize(static_cast<size_t>(p));
      pooled.resize(pool > 1 ? static_cast<size_t>(p) : 0);
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t h = u / blocks, r0 = h * gw + (u % blocks) * kBlock, n = std::min(kBlock, (h + 1) * gw - r0);
        Int8Dots(codes.data_ptr<int8_t>() + r0 * d, n, packed[static_cast<size_t>(h)], dots.data(), p);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = r0 + i;
          RowChunkMass(dots.data() + i * p, ks.data_ptr<float>() + h * p, rs.data_ptr<float>()[r],
                       news.data_ptr<float>() + r * t, t, p, pool, runs, buf.data(), pooled.data(),
                       mass.data_ptr<float>() + r * n_chunks, n_chunks);
        }
      }
    });
  } else {
    // The same numbers with device ops: integer products below 2^24 are exact in fp32.
    at::Tensor sp = at::bmm(row_codes.to(at::kFloat), keys.codes.to(at::kFloat).transpose(1, 2));
    sp.mul_(keys.scales.to(at::kFloat).unsqueeze(1)).mul_(row_scales.unsqueeze(2));
    mass = SoftmaxChunkMass(sp, sn, chunk_of, n_chunks, pool);
  }
  return std::get<0>(std::get<0>(mass.view({hkv, g, w, n_chunks}).max(2)).max(1));
}

}  // namespace impress
