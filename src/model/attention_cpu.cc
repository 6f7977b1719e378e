#include "model/attention_cpu.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() (initialised from
// itself) as a mask source, which -Wmaybe-uninitialized reports once inlined
// here (GCC bug 105593); no value of this file is read uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace impress {
namespace {

constexpr int64_t kCols = 64;    // keys a tile: four 16-lane vectors of scores a row
constexpr int64_t kMaxRows = 32;  // query rows (one head's consecutive tokens) a work item
constexpr int kScoreRows = 8;     // rows a score micro-kernel call: 8 x 2 accumulators
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// One tile of keys: columns [first, first + width) (width <= kCols) of
// [prefix ; new tokens], the first `split` of them the prefix's. Its keys
// packed transposed and zero padded ([d][kCols]) from `prefix_keys` and
// `new_keys`; its values read in place from `prefix_values` and
// `new_values` (each [columns][d] from the tile's first column of that
// source). Tiles start at whole multiples of kCols of the joined columns,
// so a row's sums are grouped alike however its keys are split between
// prefix and new tokens.
struct Tile {
  int64_t first = 0, width = 0, split = 0;
  float* packed = nullptr;
  const float *prefix_keys = nullptr, *new_keys = nullptr;
  const float *prefix_values = nullptr, *new_values = nullptr;
};

#define IMPRESS_AVX512 __attribute__((target("avx512f")))

// e^x for x <= 0 in each lane (Cephes' expf: x = n ln2 + r, a degree-6
// polynomial in r, times 2^n), within 2 ulp; x below -87 (a hidden score's
// -inf among them) gives exactly 0.
IMPRESS_AVX512 inline __m512 ExpNonPositive(__m512 x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
}

// s[r][c] = q[r] . key c for R rows and the tile's kCols columns.
template <int R>
IMPRESS_AVX512 void ScoreRows(const float* q, int64_t d, const float* packed, float* s) {
  for (int64_t half = 0; half < kCols; half += 32) {
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const float* kb = packed + half;
    for (int64_t k = 0; k < d; ++k) {
      const __m512 b0 = _mm512_load_ps(kb + k * kCols), b1 = _mm512_load_ps(kb + k * kCols + 16);
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(q[r * d + k]);
        acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm512_store_ps(s + r * kCols + half, acc[r][0]);
      _mm512_store_ps(s + r * kCols + half + 16, acc[r][1]);
    }
  }
}

template <int R>
IMPRESS_AVX512 void ScoreTail(int left, const float* q, int64_t d, const float* packed, float* s) {
  if constexpr (R > 0) {
    if (left == R) return ScoreRows<R>(q, d, packed, s);
    ScoreTail<R - 1>(left, q, d, packed, s);
  }
}

IMPRESS_AVX512 void Scores(const float* q, int n, int64_t d, const float* packed, float* s) {
  int r = 0;
  for (; r + kScoreRows <= n; r += kScoreRows) ScoreRows<kScoreRows>(q + r * d, d, packed, s + r * kCols);
  ScoreTail<kScoreRows - 1>(n - r, q + r * d, d, packed, s + r * kCols);
}

// o[r] += sum_c p[r][c] v[c] for R rows over `width` columns; ND vectors a row.
template <int ND, int R>
IMPRESS_AVX512 void AccumulateRows(const float* p, const float* v, int64_t width, float* o) {
  constexpr int64_t d = 16 * ND;
  __m512 acc[R][ND];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < ND; ++j) acc[r][j] = _mm512_load_ps(o + r * d + 16 * j);
  for (int64_t c = 0; c < width; ++c) {
    __m512 b[ND];
    for (int j = 0; j < ND; ++j) b[j] = _mm512_loadu_ps(v + c * d + 16 * j);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(p[r * kCols + c]);
      for (int j = 0; j < ND; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < ND; ++j) _mm512_store_ps(o + r * d + 16 * j, acc[r][j]);
}

template <int ND, int R>
IMPRESS_AVX512 void AccumulateTail(int left, const float* p, const float* v, int64_t width, float* o) {
  if constexpr (R > 0) {
    if (left == R) return AccumulateRows<ND, R>(p, v, width, o);
    AccumulateTail<ND, R - 1>(left, p, v, width, o);
  }
}

template <int ND>
IMPRESS_AVX512 void Accumulate(const float* p, int n, const float* v, int64_t width, float* o) {
  constexpr int kRows = std::min(8, 24 / ND);  // accumulators: at most 24 of the 32 registers
  int r = 0;
  for (; r + kRows <= n; r += kRows) AccumulateRows<ND, kRows>(p + r * kCols, v, width, o + r * 16 * ND);
  AccumulateTail<ND, kRows - 1>(n - r, p + r * kCols, v, width, o + r * 16 * ND);
}

// Bits [lo, hi) of a 64-bit column mask (empty where hi <= lo).
uint64_t Columns(int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  const uint64_t upto = hi >= kCols ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return upto & ~((uint64_t{1} << lo) - 1);
}

// The tile's prefix columns that `keep_row` (the head's prefix mask, or null)
// leaves visible: bit c for column c.
uint64_t PrefixVisible(const Tile& tile, const bool* keep_row) {
  uint64_t bits = Columns(0, tile.split);
  if (keep_row == nullptr) return bits;
  for (int64_t c = 0; c < tile.split; ++c)
    if (!keep_row[tile.first + c]) bits &= ~(uint64_t{1} << c);
  return bits;
}

// One work item: rows [i0, i0 + n) (new tokens) of one query head
// against its KV group's tiles, in two passes: every visible score and each
// row's max first (into `scratch`, kMaxRows x kCols a tile), then e^(s - max),
// their sum and the weighted values. Each weight is then what it would be in
// any order of the keys; only the sums' order differs.
template <int ND>
IMPRESS_AVX512 void AttendRows(const float* q, int n, int64_t i0, int64_t p, const std::vector<Tile>& tiles,
                               const bool* keep_row, float* scratch, float* out, int64_t out_stride) {
  constexpr int64_t d = 16 * ND;
  alignas(64) float o[kMaxRows * d];
  float m[kMaxRows], l[kMaxRows];
  std::fill(o, o + n * d, 0.0f);
  std::fill(m, m + n, kNegInf);
  std::fill(l, l + n, 0.0f);
  const __m512 neg_inf = _mm512_set1_ps(kNegInf);
  size_t seen = 0;  // tiles with a visible column for some row: a prefix, then no row sees a later token
  for (; seen < tiles.size(); ++seen) {
    const Tile& tile = tiles[seen];
    if (tile.first > p + i0 + n - 1) break;
    float* s = scratch + seen * kMaxRows * kCols;
    Scores(q, n, d, tile.packed, s);
    const uint64_t prefix_bits = PrefixVisible(tile, keep_row);
    for (int r = 0; r < n; ++r) {  // new token i sees the new tokens j <= i: joined columns up to p + i
      const uint64_t bits =
          prefix_bits | Columns(tile.split, std::min<int64_t>(tile.width, p + i0 + r - tile.first + 1));
      float* row = s + r * kCols;
      __m512 best = neg_inf;
      for (int j = 0; j < 4; ++j) {
        const __m512 v =
            _mm512_mask_mov_ps(neg_inf, static_cast<__mmask16>(bits >> (16 * j)), _mm512_load_ps(row + 16 * j));
        _mm512_store_ps(row + 16 * j, v);
        best = _mm512_max_ps(best, v);
      }
      m[r] = std::max(m[r], _mm512_reduce_max_ps(best));
    }
  }
  for (size_t i = 0; i < seen; ++i) {
    float* s = scratch + i * kMaxRows * kCols;
    for (int r = 0; r < n; ++r) {  // every row sees at least its own token: m finite
      const __m512 shift = _mm512_set1_ps(m[r]);
      __m512 sum = _mm512_setzero_ps();
      for (int j = 0; j < 4; ++j) {
        const __m512 e = ExpNonPositive(_mm512_sub_ps(_mm512_load_ps(s + r * kCols + 16 * j), shift));
        sum = _mm512_add_ps(sum, e);
        _mm512_store_ps(s + r * kCols + 16 * j, e);
      }
      l[r] += _mm512_reduce_add_ps(sum);
    }
    const Tile& tile = tiles[i];  // column by column, the prefix's part first: one order however split
    if (tile.split > 0) Accumulate<ND>(s, n, tile.prefix_values, tile.split, o);
    if (tile.split < tile.width) Accumulate<ND>(s + tile.split, n, tile.new_values, tile.width - tile.split, o);
  }
  for (int r = 0; r < n; ++r) {
    const __m512 inv = _mm512_set1_ps(1.0f / l[r]);
    for (int j = 0; j < ND; ++j)
      _mm512_storeu_ps(out + (i0 + r) * out_stride + 16 * j, _mm512_mul_ps(inv, _mm512_load_ps(o + r * d + 16 * j)));
  }
}

// Packs the tile's keys transposed into [d][kCols], zeros past its width.
void PackKeys(const Tile& tile, int64_t d) {
  std::fill(tile.packed, tile.packed + d * kCols, 0.0f);
  for (int64_t c = 0; c < tile.width; ++c) {
    const float* key = c < tile.split ? tile.prefix_keys + c * d : tile.new_keys + (c - tile.split) * d;
    for (int64_t k = 0; k < d; ++k) tile.packed[k * kCols + c] = key[k];
  }
}

// `x` ([H, n, d]) itself where each head's rows are dense (a gathered
// prefix with room after each head's rows is), else a contiguous copy.
at::Tensor DenseRows(const at::Tensor& x) {
  return x.stride(2) == 1 && x.stride(1) == x.size(2) ? x : x.contiguous();
}

template <int ND>
void Run(const LayerQkv& x, const PrefixKv& prefix, at::Tensor* out) {
  constexpr int64_t d = 16 * ND;
  const int64_t hq = x.q.size(0), t = x.q.size(1), hkv = x.k.size(0), g = hq / hkv;
  const int64_t p = prefix.k.defined() ? prefix.k.size(1) : 0;
  const at::Tensor q = (x.q * x.scale).contiguous();
  const at::Tensor nk = DenseRows(x.k), nv = DenseRows(x.v);
  at::Tensor pk, pv, keep;
  if (p > 0) pk = DenseRows(prefix.k), pv = DenseRows(prefix.v);
  if (p > 0 && prefix.keep.defined()) keep = prefix.keep.to(at::kBool).contiguous();

  const int64_t tiles_per_head = (p + t + kCols - 1) / kCols;
  at::Tensor packed = at::empty({hkv * tiles_per_head * d * kCols}, at::kFloat);  // 64-byte aligned (CPU allocator)
  std::vector<std::vector<Tile>> tiles(static_cast<size_t>(hkv));
  for (int64_t h = 0; h < hkv; ++h)
    for (int64_t c0 = 0; c0 < p + t; c0 += kCols) {
      Tile tile;
      tile.first = c0;
      tile.width = std::min(kCols, p + t - c0);
      tile.split = std::clamp<int64_t>(p - c0, 0, tile.width);
      tile.packed = packed.data_ptr<float>() + (h * tiles_per_head + c0 / kCols) * d * kCols;
      if (tile.split > 0) {
        tile.prefix_keys = pk.data_ptr<float>() + h * pk.stride(0) + c0 * d;
        tile.prefix_values = pv.data_ptr<float>() + h * pv.stride(0) + c0 * d;
      }
      if (tile.split < tile.width) {
        const int64_t fresh0 = std::max<int64_t>(c0 - p, 0);  // the tile's first new token
        tile.new_keys = nk.data_ptr<float>() + h * nk.stride(0) + fresh0 * d;
        tile.new_values = nv.data_ptr<float>() + h * nv.stride(0) + fresh0 * d;
      }
      tiles[static_cast<size_t>(h)].push_back(tile);
    }
  at::parallel_for(0, hkv * tiles_per_head, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      PackKeys(tiles[static_cast<size_t>(i / tiles_per_head)][static_cast<size_t>(i % tiles_per_head)], d);
  });

  *out = at::empty({t, hq * d}, at::kFloat);
  float* o = out->data_ptr<float>();
  const float* qp = q.data_ptr<float>();
  const bool* kp = keep.defined() ? keep.data_ptr<bool>() : nullptr;
  const int64_t blocks = (t + kMaxRows - 1) / kMaxRows, rows = (t + blocks - 1) / blocks;
  const int64_t scratch_floats = tiles_per_head * kMaxRows * kCols;  // one work item's scores
  at::Tensor scratch = at::empty({at::get_num_threads() * scratch_floats}, at::kFloat);
  at::parallel_for(0, hq * blocks, 1, [&](int64_t b, int64_t e) {
    float* mine = scratch.data_ptr<float>() + at::get_thread_num() * scratch_floats;
    for (int64_t item = b; item < e; ++item) {
      const int64_t head = item / blocks, i0 = (item % blocks) * rows;
      const int n = static_cast<int>(std::min(rows, t - i0));
      AttendRows<ND>(qp + (head * t + i0) * d, n, i0, p, tiles[static_cast<size_t>(head / g)],
                     kp != nullptr ? kp + head * p : nullptr, mine, o + head * d, hq * d);
    }
  });
}

}  // namespace

bool AttendCpu(const LayerQkv& x, const PrefixKv& prefix, at::Tensor* out) {
  if (!HasAvx512() || x.attend_new.defined() || !x.q.device().is_cpu()) return false;
  if (x.q.scalar_type() != at::kFloat || x.k.scalar_type() != at::kFloat || x.v.scalar_type() != at::kFloat)
    return false;
  if (prefix.k.defined() && prefix.k.size(1) > 0 &&
      (prefix.k.scalar_type() != at::kFloat || prefix.v.scalar_type() != at::kFloat || !prefix.k.device().is_cpu()))
    return false;
  switch (x.q.size(2)) {
    case 16: Run<1>(x, prefix, out); return true;
    case 32: Run<2>(x, prefix, out); return true;
    case 64: Run<4>(x, prefix, out); return true;
    case 128: Run<8>(x, prefix, out); return true;
    default: return false;
  }
}

}  // namespace impress
