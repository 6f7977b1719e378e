// A chunk's stored parts decoded on the way up (codec/kv_codec.h): the one
// place the prefix store decodes; and the way down from a model's KV to
// codec/encoded_chunk.h's EncodeForStore.
// With KvCodec::kNone the parts pass through as they are.
#pragma once

#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "cache/tiered_cache.h"
#include "codec/encoded_chunk.h"
#include "model/kv_provider.h"
#include "store/chunk_layout.h"

namespace impress {

// Part `part` (0 keys, 1 values, 2 probe keys) of geometry `g` stored with
// `codec`, from `bytes` (PartBytes long) to [C, heads, d] in `kv_type` in `out`.
void DecodeChunkPart(const ChunkGeometry& g, int part, KvCodec codec, const uint8_t* bytes, at::Tensor* out);

// The same from `bytes` (uint8, PartBytes long) on any device, in tensor
// operations (DecodePartOn), on that device: bit-identical to DecodeChunkPart.
at::Tensor DecodeChunkPartOn(const ChunkGeometry& g, int part, KvCodec codec, const at::Tensor& bytes,
                             at::ScalarType kv_type);

// Chunks first..first+n-1 of layer `l` of `kv` (whose entry 0 is the token at
// position `kv_offset`) as the store keeps them: token-major host copies in
// `kv_type` (keys, values, the probe heads' keys) encoded with g.codec as ids
// first_id.. (EncodeForStore), appended to `out`.
void EncodeStoredChunks(const ChunkGeometry& g, at::ScalarType kv_type, const DenseKvCache& kv, int l, int64_t first,
                        int64_t n, int64_t kv_offset, uint64_t first_id, std::vector<EncodedChunk>* out);

// What the caches hold for a chunk just written: its decoded keys and values
// in storage of their own (a view into a larger tensor is copied, a part
// decoded on its own is taken as it is) and, under a codec, its encoded ones.
ChunkKv CacheEntry(const EncodedChunk& chunk);

// Sets kv->k and kv->v ([C, kv_heads, d] in `kv_type`) from kv->enc: the
// caches' decoder (TierOptions::decode). On the CPU in host memory; on CUDA
// the encoded bytes go up and are decoded on `device`, and kv->ready is the
// event after that, for readers on other streams.
void DecodeChunkKv(const ChunkGeometry& g, at::ScalarType kv_type, const at::Device& device, ChunkKv* kv);

}  // namespace impress
