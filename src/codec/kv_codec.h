// How prefix KV is stored below the GPU (docs/store.md, "KV codecs"): as the
// stored dtype's values, or quantized to 8 or 4 bits with half-precision
// scales kept beside them. One encoded part holds one chunk's keys, values or
// probe-key copy, [tokens][heads][dim] token-major as chunks are stored.
//   int8: symmetric, per (token, head): s = absmax / 127 (fp16),
//         q = round(x / s) in [-127, 127]; bytes: q, then the scales [tokens][heads].
//   int4 keys (and the probe copy): per channel (head, dim) over the part's
//         tokens (KIVI's grouping): scale = (max - min) / 15 and zero = min
//         (both fp16), q = round((x - zero) / scale) in [0, 15]; bytes: q two
//         to a byte (element 2j in the low nibble of byte j, 2j+1 in the high),
//         then the scales [heads][dim], then the zeros.
//   int4 values: the same per token in groups of Int4Group(dim) along dim;
//         scales and zeros [tokens][heads][dim / group].
//   k8v4: keys (and the probe copy) as int8, values as int4: the fallback
//         where int4 keys cost accuracy (keys steer attention, and with it
//         what a selection keeps).
// round is to nearest, ties to even (torch.round); a zero scale gives q = 0.
// Decoding computes q * s (int8) or q * scale + zero (int4) in fp32 and
// rounds to fp16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// A codec's name, part codecs and first chunk's codec are its row in
// kv_codec.cc's table, in this order.
enum class KvCodec : uint8_t { kNone, kInt8, kInt4, kK8V4 };
// Keys (and their probe copy) or values: int4 groups them differently.
enum class KvRole : uint8_t { kKeys, kValues };

// "fp16" (none), "int8", "int4", "k8v4"; the error names the flag's choices.
StatusOr<KvCodec> ParseKvCodec(const std::string& name);
const char* KvCodecName(KvCodec codec);
// The names ParseKvCodec takes (for the command line's checks), fp16 first.
const std::vector<std::string>& KvCodecNames();

// The codec of chunk `index` of a prefix stored with `codec`: the codecs
// with int4 parts keep the first chunk (the attention sinks) at int8.
KvCodec ChunkCodec(KvCodec codec, int64_t index);
// The codec one role's part is encoded with: kNone, kInt8 or kInt4 (a mix
// such as k8v4 names one per role).
KvCodec PartCodec(KvCodec codec, KvRole role);

// Where an int8 part of `rows` rows ([tokens][heads] of them) of `dim`
// values keeps what: the codes row by row, then one fp16 scale a row. Every
// reader and writer of int8 parts (the host codec, the device decode, the
// digest's row split) takes its offsets from here.
struct Int8Layout {
  size_t rows = 0, dim = 0;
  size_t scales_offset() const { return rows * dim; }  // the first scale's byte
  size_t bytes() const { return rows * dim + 2 * rows; }
};

// Values per int4 value group along dim: 32 when dim is a multiple of 32, else dim.
int Int4Group(int dim);
// Bytes of one encoded part of tokens x heads x dim values (2 per value for kNone).
size_t EncodedBytes(KvCodec codec, KvRole role, int tokens, int heads, int dim);
// Encodes fp16 `src` ([tokens][heads][dim]) into `dst` (EncodedBytes).
// REQUIRES: dim even.
void EncodeKv(KvCodec codec, KvRole role, const uint16_t* src, int tokens, int heads, int dim, uint8_t* dst);
// Decodes `src` (EncodedBytes) into fp16 `dst` ([tokens][heads][dim]).
void DecodeKv(KvCodec codec, KvRole role, const uint8_t* src, int tokens, int heads, int dim, uint16_t* dst);
// Decodes `src` into fp32, element (t, h, i) at dst[t * token_stride + h *
// head_stride + i]: the values DecodeKv rounds to fp16, unrounded (kNone: the
// halves, exact).
void DecodeKvFloat(KvCodec codec, KvRole role, const uint8_t* src, int tokens, int heads, int dim, float* dst,
                   int64_t token_stride, int64_t head_stride);

// IEEE half <-> float, round to nearest even (F16C where the CPU has it).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
// n halves at src as floats at dst (exact).
void HalfToFloat(const uint16_t* src, float* dst, size_t n);

}  // namespace impress
