#include "select/int8_dots.h"

#include <immintrin.h>

#include <cstring>

#include "common/status.h"

namespace impress {
namespace {

constexpr int64_t kGroup = 16;  // rows of k per packed group: one 512-bit register of int32 sums

bool HasVnni() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
}

// vpdpbusd multiplies unsigned bytes by signed ones: a + 128 as unsigned,
// and 128 times each k row's sum taken off again.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void DotsVnni(const int8_t* a, int64_t n, const PackedInt8& k,
                                                                     int32_t* dots, int64_t stride) {
  const int64_t steps = k.dim / 4, groups = (k.rows + kGroup - 1) / kGroup;
  alignas(64) uint32_t au[kInt8DotRows][kMaxInt8Dim / 4];
  for (int64_t i = 0; i < kInt8DotRows; ++i)
    for (int64_t s = 0; s < steps; ++s) {
      uint8_t b[4];
      for (int x = 0; x < 4; ++x) b[x] = i < n ? static_cast<uint8_t>(a[i * k.dim + 4 * s + x] + 128) : 128;
      std::memcpy(&au[i][s], b, 4);
    }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i acc[kInt8DotRows];
    for (auto& v : acc) v = _mm512_setzero_si512();
    const int8_t* kb = k.bytes.data() + g * steps * 64;
    for (int64_t s = 0; s < steps; ++s) {
      const __m512i kv = _mm512_loadu_si512(kb + s * 64);
      for (int64_t i = 0; i < kInt8DotRows; ++i)
        acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_set1_epi32(static_cast<int>(au[i][s])), kv);
    }
    const __m512i off = _mm512_slli_epi32(_mm512_loadu_si512(k.sums.data() + g * kGroup), 7);
    const int64_t left = k.rows - g * kGroup;
    const __mmask16 mask = left >= kGroup ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    for (int64_t i = 0; i < n; ++i)
      _mm512_mask_storeu_epi32(dots + i * stride + g * kGroup, mask, _mm512_sub_epi32(acc[i], off));
  }
}

}  // namespace

void Int8DotsPlain(const int8_t* a, int64_t n, const PackedInt8& k, int32_t* dots, int64_t stride) {
  IMPRESS_CHECK(n >= 0 && n <= kInt8DotRows && stride >= k.rows);
  const int64_t steps = k.dim / 4;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k.rows; ++j) {
      const int8_t* kb = k.bytes.data() + (j / kGroup) * steps * 64 + (j % kGroup) * 4;
      int32_t s = 0;
      for (int64_t d = 0; d < k.dim; ++d) s += a[i * k.dim + d] * kb[(d / 4) * 64 + d % 4];
      dots[i * stride + j] = s;
    }
}

void PackInt8Rows(const int8_t* rows, int64_t n, int64_t dim, PackedInt8* out) {
  IMPRESS_CHECK(dim % 4 == 0 && dim <= kMaxInt8Dim && n >= 0);
  const int64_t groups = (n + kGroup - 1) / kGroup, steps = dim / 4;
  PackedInt8& p = *out;
  p.rows = n;
  p.dim = dim;
  p.bytes.assign(static_cast<size_t>(groups * kGroup * dim), 0);
  p.sums.assign(static_cast<size_t>(groups * kGroup), 0);
  for (int64_t j = 0; j < n; ++j) {
    int8_t* dst = p.bytes.data() + (j / kGroup) * steps * 64 + (j % kGroup) * 4;
    int32_t sum = 0;
    for (int64_t s = 0; s < steps; ++s) std::memcpy(dst + s * 64, rows + j * dim + 4 * s, 4);
    for (int64_t d = 0; d < dim; ++d) sum += rows[j * dim + d];
    p.sums[static_cast<size_t>(j)] = sum;
  }
}

void Int8Dots(const int8_t* a, int64_t n, const PackedInt8& k, int32_t* dots, int64_t stride) {
  IMPRESS_CHECK(n >= 0 && n <= kInt8DotRows && stride >= k.rows);
  if (HasVnni()) {
    DotsVnni(a, n, k, dots, stride);
  } else {
    Int8DotsPlain(a, n, k, dots, stride);
  }
}

}  // namespace impress
