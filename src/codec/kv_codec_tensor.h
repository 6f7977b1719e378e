// The KV codecs (codec/kv_codec.h) on tensors: one chunk part encoded to
// bytes and back, and a held prefix's KV put through the codec chunk by chunk
// exactly as the store does, so that `eval` attends to the numbers `run` reads.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "codec/kv_codec.h"

namespace impress {

// One part [tokens, heads, dim] (any floating dtype; rounded to fp16 first)
// as encoded bytes (uint8, EncodedBytes long).
at::Tensor EncodePart(KvCodec codec, KvRole role, const at::Tensor& part);
// Encoded bytes back to [tokens, heads, dim] fp16.
at::Tensor DecodePart(KvCodec codec, KvRole role, const at::Tensor& bytes, int64_t tokens, int64_t heads, int64_t dim);

// DecodePart in tensor operations, on the device `bytes` is on (uint8,
// EncodedBytes long): how a GPU decodes a part after copying up its encoded
// bytes. The same arithmetic as DecodeKv (q * s, or q * scale + zero, in
// fp32 with no fused multiply-add, rounded to fp16), so bit-identical to it.
at::Tensor DecodePartOn(KvCodec codec, KvRole role, const at::Tensor& bytes, int64_t tokens, int64_t heads,
                        int64_t dim);

// Replaces every chunk of `chunk_tokens` positions that lies whole among the
// first `tokens` of the layer KV `k`, `v`
// ([heads, positions, dim], any floating dtype) by their round trip through
// the chunk's codec (ChunkCodec). A partial last chunk is left as it is: the
// store never holds one. kNone changes nothing.
void RoundTripPrefix(KvCodec codec, int64_t chunk_tokens, int64_t tokens, at::Tensor k, at::Tensor v);

}  // namespace impress
