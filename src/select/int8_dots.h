// Exact int8 dot products of a few rows against many: the digest system's
// scores before scaling (select/digest_int8.cc). Results are the exact int32
// sums on every machine; where the CPU has AVX-512 VNNI they come from
// vpdpbusd over keys packed for it, elsewhere from a plain loop.
#pragma once

#include <cstdint>
#include <vector>

namespace impress {

// Int8 rows [P, d] packed for Int8Dots: groups of 16 rows, each group d/4
// steps of 16 rows x 4 bytes (rows past P zero), and each row's code sum.
struct PackedInt8 {
  std::vector<int8_t> bytes;
  std::vector<int32_t> sums;  // padded to whole groups
  int64_t rows = 0, dim = 0;
};

// Packs `rows` into `out`, reusing its memory.
// REQUIRES: dim a multiple of 4, at most kMaxInt8Dim.
constexpr int64_t kMaxInt8Dim = 256;
void PackInt8Rows(const int8_t* rows, int64_t n, int64_t dim, PackedInt8* out);

// The most rows of `a` one Int8Dots call takes.
constexpr int64_t kInt8DotRows = 8;

// dots[i * stride + j] = sum_d a[i * dim + d] * k[j][d] for i < n, j < k.rows,
// exact. REQUIRES: n <= kInt8DotRows, stride >= k.rows.
void Int8Dots(const int8_t* a, int64_t n, const PackedInt8& k, int32_t* dots, int64_t stride);
// The same by the plain loop machines without VNNI run (tests hold the two equal).
void Int8DotsPlain(const int8_t* a, int64_t n, const PackedInt8& k, int32_t* dots, int64_t stride);

}  // namespace impress
