#include "common/crc32c.h"

#include <array>

namespace impress {
namespace {

// Slicing-by-8 tables for the reflected polynomial 0x82F63B78.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t;
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

const Tables& T() {
  static const Tables kTables;
  return kTables;
}

// The operator that appends `bytes` zero bytes to a raw (uninverted) CRC,
// as four byte-indexed tables: raw(c, M || zeros) = Shift(raw(c, M)).
// Built by squaring the one-zero-bit operator, as zlib's crc32_combine does.
struct ZerosOperator {
  std::array<std::array<uint32_t, 256>, 4> t;
  explicit ZerosOperator(size_t bytes) {
    using Matrix = std::array<uint32_t, 32>;  // column i: the image of bit i
    auto times = [](const Matrix& m, uint32_t v) {
      uint32_t r = 0;
      for (int i = 0; v != 0; ++i, v >>= 1)
        if (v & 1u) r ^= m[i];
      return r;
    };
    auto square = [&](const Matrix& m) {
      Matrix r;
      for (int i = 0; i < 32; ++i) r[i] = times(m, m[i]);
      return r;
    };
    Matrix op;  // one zero bit: shift right, folding in the reflected polynomial
    op[0] = 0x82F63B78u;
    for (int i = 1; i < 32; ++i) op[i] = 1u << (i - 1);
    Matrix power = square(square(square(op)));  // one zero byte
    Matrix total;
    for (int i = 0; i < 32; ++i) total[i] = 1u << i;
    for (size_t n = bytes; n != 0; n >>= 1, power = square(power))
      if (n & 1u) {
        Matrix next;
        for (int i = 0; i < 32; ++i) next[i] = times(power, total[i]);
        total = next;
      }
    for (int k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b) t[k][b] = times(total, b << (8 * k));
  }
  uint32_t Shift(uint32_t c) const { return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24]; }
};

#if defined(__x86_64__)
// The SSE4.2 crc32 instruction computes the same polynomial 8 bytes at a
// time. One stream waits on each instruction's latency (3 cycles), so three
// independent streams run over three adjacent blocks and are joined by
// shifting: raw(c, A || B) = Shift_|B|(raw(c, A)) ^ raw(0, B).
template <size_t kBlock>
__attribute__((target("sse4.2"))) uint64_t Crc32cThreeWay(const uint8_t*& p, size_t& n, uint64_t c) {
  static const ZerosOperator kShift(kBlock);
  while (n >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t v0, v1, v2;
      __builtin_memcpy(&v0, p + i, 8);
      __builtin_memcpy(&v1, p + kBlock + i, 8);
      __builtin_memcpy(&v2, p + 2 * kBlock + i, 8);
      c = __builtin_ia32_crc32di(c, v0);
      c1 = __builtin_ia32_crc32di(c1, v1);
      c2 = __builtin_ia32_crc32di(c2, v2);
    }
    c = kShift.Shift(kShift.Shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^ static_cast<uint32_t>(c2);
    p += 3 * kBlock;
    n -= 3 * kBlock;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = ~crc;
  c = Crc32cThreeWay<2048>(p, n, c);
  c = Crc32cThreeWay<256>(p, n, c);
  while (n >= 8) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
#if defined(__x86_64__)
  static const bool kHardware = __builtin_cpu_supports("sse4.2");
  if (kHardware) return Crc32cHardware(static_cast<const uint8_t*>(data), n, crc);
#endif
  return Crc32cPortable(data, n, crc);
}

uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc) {
  const auto& t = T().t;
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  while (n >= 8) {
    uint32_t lo = crc ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
          t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return ~crc;
}

}  // namespace impress
