// A chunk's three parts put through the store's codec (codec/kv_codec.h) on
// the way down, and back on the way up: the one place the engine encodes and
// decodes. With KvCodec::kNone the parts pass through as they are.
#pragma once

#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "cache/tiered_cache.h"
#include "store/chunk_layout.h"

namespace impress {

// One chunk's parts [C, heads, d] in the KV dtype (keys, values, probe keys),
// encoded with `codec` for a backend, and as they decode (what every later
// read returns: what the caches must hold too).
struct EncodedChunk {
  KvCodec codec = KvCodec::kNone;
  std::array<at::Tensor, 3> bytes;    // what the backend stores (uint8; the parts themselves under kNone)
  std::array<at::Tensor, 3> decoded;  // [C, heads, d] in the KV dtype
};

// REQUIRES: contiguous host tensors; fp16 unless `codec` is kNone.
EncodedChunk EncodeChunk(KvCodec codec, const at::Tensor& k, const at::Tensor& v, const at::Tensor& probe);

// Part `part` (0 keys, 1 values, 2 probe keys) of geometry `g` stored with
// `codec`, from `bytes` (PartBytes long) to [C, heads, d] in `kv_type` in `out`.
void DecodeChunkPart(const ChunkGeometry& g, int part, KvCodec codec, const uint8_t* bytes, at::Tensor* out);

// The same from `bytes` (uint8, PartBytes long) on any device, in tensor
// operations (DecodePartOn), on that device: bit-identical to DecodeChunkPart.
at::Tensor DecodeChunkPartOn(const ChunkGeometry& g, int part, KvCodec codec, const at::Tensor& bytes,
                             at::ScalarType kv_type);

// Sets kv->k and kv->v ([C, kv_heads, d] in `kv_type`) from kv->enc: the
// caches' decoder (TierOptions::decode). On the CPU in host memory; on CUDA
// the encoded bytes go up and are decoded on `device`, and kv->ready is the
// event after that, for readers on other streams.
void DecodeChunkKv(const ChunkGeometry& g, at::ScalarType kv_type, const at::Device& device, ChunkKv* kv);

}  // namespace impress
