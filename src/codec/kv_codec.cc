#include "codec/kv_codec.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "common/named.h"

namespace impress {
namespace {

uint16_t FloatToHalfScalar(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {  // a subnormal half, or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(h);
}

float HalfToFloatScalar(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) mant <<= 1, --exp;
      x = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

bool HasF16c() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}

__attribute__((target("f16c,avx"))) void ToFloatF16c(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = HalfToFloatScalar(src[i]);
}

__attribute__((target("f16c,avx"))) void ToHalfF16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = FloatToHalfScalar(src[i]);
}

void ToFloat(const uint16_t* src, float* dst, size_t n) {
  if (HasF16c()) return ToFloatF16c(src, dst, n);
  for (size_t i = 0; i < n; ++i) dst[i] = HalfToFloatScalar(src[i]);
}

void ToHalf(const float* src, uint16_t* dst, size_t n) {
  if (HasF16c()) return ToHalfF16c(src, dst, n);
  for (size_t i = 0; i < n; ++i) dst[i] = FloatToHalfScalar(src[i]);
}

int Quantize(float x, float zero, float scale, int lo, int hi) {
  if (!(scale > 0)) return 0;
  return static_cast<int>(std::clamp(std::nearbyint((x - zero) / scale), static_cast<float>(lo), static_cast<float>(hi)));
}

void EncodeInt8(const float* x, size_t rows, int dim, uint8_t* dst) {
  auto* q = reinterpret_cast<int8_t*>(dst);
  uint8_t* scales = dst + Int8Layout{rows, static_cast<size_t>(dim)}.scales_offset();
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + r * dim;
    float amax = 0;
    for (int d = 0; d < dim; ++d) amax = std::max(amax, std::fabs(row[d]));
    const uint16_t s16 = FloatToHalfScalar(amax / 127.0f);
    const float s = HalfToFloatScalar(s16);
    std::memcpy(scales + 2 * r, &s16, 2);
    for (int d = 0; d < dim; ++d) q[r * dim + d] = static_cast<int8_t>(Quantize(row[d], 0.0f, s, -127, 127));
  }
}

void DecodeInt8(const uint8_t* src, size_t rows, int dim, float* x) {
  const auto* q = reinterpret_cast<const int8_t*>(src);
  const uint8_t* scales = src + Int8Layout{rows, static_cast<size_t>(dim)}.scales_offset();
  for (size_t r = 0; r < rows; ++r) {
    uint16_t s16;
    std::memcpy(&s16, scales + 2 * r, 2);
    const float s = HalfToFloatScalar(s16);
    for (int d = 0; d < dim; ++d) x[r * dim + d] = static_cast<float>(q[r * dim + d]) * s;
  }
}

// int4 with one (scale, zero) per group: group g holds the elements i with
// group_of(i) == g. Keys: a channel (head, dim) over the tokens; values: `group` dims of one (token, head).
struct Int4Layout {
  size_t n = 0, groups = 0;
  int heads = 0, dim = 0, group = 0;
  bool per_channel = false;
  size_t GroupOf(size_t i) const {
    return per_channel ? i % (static_cast<size_t>(heads) * dim) : i / static_cast<size_t>(group);
  }
};

Int4Layout Layout(KvRole role, int tokens, int heads, int dim) {
  Int4Layout l;
  l.n = static_cast<size_t>(tokens) * heads * dim, l.heads = heads, l.dim = dim, l.group = Int4Group(dim);
  l.per_channel = role == KvRole::kKeys;
  l.groups = l.per_channel ? static_cast<size_t>(heads) * dim : l.n / l.group;
  return l;
}

void EncodeInt4(const Int4Layout& l, const float* x, uint8_t* dst) {
  std::vector<float> mn(l.groups, INFINITY), mx(l.groups, -INFINITY), scale(l.groups), zero(l.groups);
  for (size_t i = 0; i < l.n; ++i) {
    const size_t g = l.GroupOf(i);
    mn[g] = std::min(mn[g], x[i]);
    mx[g] = std::max(mx[g], x[i]);
  }
  auto* scales = reinterpret_cast<uint16_t*>(dst + l.n / 2);
  auto* zeros = scales + l.groups;
  for (size_t g = 0; g < l.groups; ++g) {
    const uint16_t s16 = FloatToHalfScalar((mx[g] - mn[g]) / 15.0f), z16 = FloatToHalfScalar(mn[g]);
    std::memcpy(&scales[g], &s16, 2);
    std::memcpy(&zeros[g], &z16, 2);
    scale[g] = HalfToFloatScalar(s16), zero[g] = HalfToFloatScalar(z16);
  }
  for (size_t i = 0; i < l.n; i += 2) {
    const size_t g0 = l.GroupOf(i), g1 = l.GroupOf(i + 1);
    const int lo = Quantize(x[i], zero[g0], scale[g0], 0, 15), hi = Quantize(x[i + 1], zero[g1], scale[g1], 0, 15);
    dst[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// Decodes the elements [begin, end) (even bounds) that share one row of
// parameters: element i uses scale[i % period], zero[i % period] (keys: a
// token's channels; values: one group, period = group with scale and zero
// already offset to it).
inline void DecodeInt4Run(const uint8_t* packed, size_t begin, size_t end, const float* scale, const float* zero,
                          size_t period, float* x) {
  for (size_t i = begin, c = 0; i < end; i += 2, c += 2) {
    if (c == period) c = 0;
    const uint8_t b = packed[i / 2];
    x[i] = static_cast<float>(b & 15) * scale[c] + zero[c];
    x[i + 1] = static_cast<float>(b >> 4) * scale[c + 1] + zero[c + 1];
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// 16 elements [i, i + 16) from 8 packed bytes: q * scale + zero with the
// scalar loop's two roundings (a multiply, then an add; no fused op).
__attribute__((target("avx2"))) inline void DecodeInt4Block(const uint8_t* packed, const __m256 s[2],
                                                             const __m256 z[2], float* x) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
  const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  const __m128i q = _mm_unpacklo_epi8(low, high);  // element order: low nibble, high nibble, ...
  const __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q));
  const __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8)));
  _mm256_storeu_ps(x, _mm256_add_ps(_mm256_mul_ps(q0, s[0]), z[0]));
  _mm256_storeu_ps(x + 8, _mm256_add_ps(_mm256_mul_ps(q1, s[1]), z[1]));
}

// DecodeInt4Run's work when blocks of 16 never straddle a parameter row:
// per channel (period % 16 == 0) or per group (group % 16 == 0).
__attribute__((target("avx2"))) void DecodeInt4Avx2(const Int4Layout& l, const uint8_t* src, const float* scale,
                                                     const float* zero, float* x) {
  if (l.per_channel) {
    for (size_t i = 0, c = 0; i < l.n; i += 16, c += 16) {
      if (c == l.groups) c = 0;
      const __m256 s[2] = {_mm256_loadu_ps(scale + c), _mm256_loadu_ps(scale + c + 8)};
      const __m256 z[2] = {_mm256_loadu_ps(zero + c), _mm256_loadu_ps(zero + c + 8)};
      DecodeInt4Block(src + i / 2, s, z, x + i);
    }
    return;
  }
  const size_t group = static_cast<size_t>(l.group);
  for (size_t g = 0; g < l.groups; ++g) {
    const __m256 s[2] = {_mm256_set1_ps(scale[g]), _mm256_set1_ps(scale[g])};
    const __m256 z[2] = {_mm256_set1_ps(zero[g]), _mm256_set1_ps(zero[g])};
    for (size_t i = g * group; i < (g + 1) * group; i += 16) DecodeInt4Block(src + i / 2, s, z, x + i);
  }
}

void DecodeInt4(const Int4Layout& l, const uint8_t* src, float* x) {
  const uint8_t* params = src + l.n / 2;
  thread_local std::vector<float> scale, zero;
  scale.resize(l.groups), zero.resize(l.groups);
  for (size_t g = 0; g < l.groups; ++g) {
    uint16_t s16, z16;
    std::memcpy(&s16, params + 2 * g, 2);
    std::memcpy(&z16, params + 2 * (l.groups + g), 2);
    scale[g] = HalfToFloatScalar(s16), zero[g] = HalfToFloatScalar(z16);
  }
  if (HasAvx2() && (l.per_channel ? l.groups % 16 == 0 : l.group % 16 == 0))
    return DecodeInt4Avx2(l, src, scale.data(), zero.data(), x);
  if (l.per_channel) {  // one parameter row per channel, repeating every token
    DecodeInt4Run(src, 0, l.n, scale.data(), zero.data(), l.groups, x);
    return;
  }
  const size_t group = static_cast<size_t>(l.group);
  for (size_t g = 0; g < l.groups; ++g) {  // one (scale, zero) per group of `group` elements
    const float s[2] = {scale[g], scale[g]}, z[2] = {zero[g], zero[g]};
    DecodeInt4Run(src, g * group, (g + 1) * group, s, z, 2, x);
  }
}

// One row per KvCodec, in the enum's order: its name, the codec each role's
// parts are encoded with (kNone, kInt8 and kInt4 have byte arithmetic of
// their own; a mix names them), and the codec of the prefix's first chunk.
struct CodecRow {
  const char* name;
  KvCodec keys, values;  // keys also for the probe-key copy
  KvCodec first_chunk;   // the attention sinks: int8 where a role is int4
};
constexpr CodecRow kCodecs[] = {
    {"fp16", KvCodec::kNone, KvCodec::kNone, KvCodec::kNone},
    {"int8", KvCodec::kInt8, KvCodec::kInt8, KvCodec::kInt8},
    {"int4", KvCodec::kInt4, KvCodec::kInt4, KvCodec::kInt8},
    {"k8v4", KvCodec::kInt8, KvCodec::kInt4, KvCodec::kInt8},
};

const CodecRow& RowOf(KvCodec codec) {
  const size_t i = static_cast<size_t>(codec);
  return kCodecs[i < std::size(kCodecs) ? i : 0];
}

}  // namespace

const std::vector<std::string>& KvCodecNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const CodecRow& r : kCodecs) n.push_back(r.name);
    return n;
  }();
  return names;
}

KvCodec PartCodec(KvCodec codec, KvRole role) {
  const CodecRow& r = RowOf(codec);
  return role == KvRole::kKeys ? r.keys : r.values;
}

StatusOr<KvCodec> ParseKvCodec(const std::string& name) {
  if (name == "none") return KvCodec::kNone;
  const std::vector<std::string>& names = KvCodecNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) return static_cast<KvCodec>(i);
  return Status::InvalidArgument("--kv-codec: unknown '" + name + "' (" + JoinNames(names) + ")");
}

const char* KvCodecName(KvCodec codec) { return RowOf(codec).name; }

KvCodec ChunkCodec(KvCodec codec, int64_t index) { return index == 0 ? RowOf(codec).first_chunk : codec; }

int Int4Group(int dim) { return dim % 32 == 0 ? 32 : dim; }

size_t EncodedBytes(KvCodec codec, KvRole role, int tokens, int heads, int dim) {
  const size_t n = static_cast<size_t>(tokens) * heads * dim;
  switch (PartCodec(codec, role)) {
    case KvCodec::kInt8: return Int8Layout{static_cast<size_t>(tokens) * heads, static_cast<size_t>(dim)}.bytes();
    case KvCodec::kInt4: return n / 2 + 2 * 2 * Layout(role, tokens, heads, dim).groups;
    default: return 2 * n;
  }
}

float HalfToFloat(uint16_t h) { return HalfToFloatScalar(h); }
void HalfToFloat(const uint16_t* src, float* dst, size_t n) { ToFloat(src, dst, n); }
uint16_t FloatToHalf(float f) { return FloatToHalfScalar(f); }

void EncodeKv(KvCodec codec, KvRole role, const uint16_t* src, int tokens, int heads, int dim, uint8_t* dst) {
  codec = PartCodec(codec, role);
  const size_t n = static_cast<size_t>(tokens) * heads * dim;
  if (codec == KvCodec::kNone) {
    std::memcpy(dst, src, 2 * n);
    return;
  }
  std::vector<float> x(n);
  ToFloat(src, x.data(), n);
  if (codec == KvCodec::kInt8) EncodeInt8(x.data(), static_cast<size_t>(tokens) * heads, dim, dst);
  else EncodeInt4(Layout(role, tokens, heads, dim), x.data(), dst);
}

namespace {

// A part of `codec` (a part codec) decoded to fp32 [tokens][heads][dim] in
// this thread's scratch buffer, valid until the thread's next call.
const float* DecodeToScratch(KvCodec codec, KvRole role, const uint8_t* src, int tokens, int heads, int dim) {
  const size_t n = static_cast<size_t>(tokens) * heads * dim;
  thread_local std::vector<float> x;
  x.resize(n);
  if (codec == KvCodec::kNone) ToFloat(reinterpret_cast<const uint16_t*>(src), x.data(), n);
  else if (codec == KvCodec::kInt8) DecodeInt8(src, static_cast<size_t>(tokens) * heads, dim, x.data());
  else DecodeInt4(Layout(role, tokens, heads, dim), src, x.data());
  return x.data();
}

}  // namespace

void DecodeKv(KvCodec codec, KvRole role, const uint8_t* src, int tokens, int heads, int dim, uint16_t* dst) {
  codec = PartCodec(codec, role);
  const size_t n = static_cast<size_t>(tokens) * heads * dim;
  if (codec == KvCodec::kNone) {
    std::memcpy(dst, src, 2 * n);
    return;
  }
  ToHalf(DecodeToScratch(codec, role, src, tokens, heads, dim), dst, n);
}

void DecodeKvFloat(KvCodec codec, KvRole role, const uint8_t* src, int tokens, int heads, int dim, float* dst,
                   int64_t token_stride, int64_t head_stride) {
  const float* x = DecodeToScratch(PartCodec(codec, role), role, src, tokens, heads, dim);
  for (int t = 0; t < tokens; ++t)  // each [dim] row to its place
    for (int h = 0; h < heads; ++h)
      std::memcpy(dst + t * token_stride + h * head_stride, x + (static_cast<size_t>(t) * heads + h) * dim,
                  sizeof(float) * static_cast<size_t>(dim));
}

}  // namespace impress
