// One (chunk, layer) on its way below the GPU, owning its parts: the one
// carrier of a chunk's data from where it is computed or repacked to the
// local disk (ChunkStore::Commit), the backends below (PrefixPut, CopyPut) and the
// caches (what a later read of it returns).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "codec/key_digest.h"
#include "codec/kv_codec.h"

namespace impress {

struct EncodedChunk {
  uint64_t chunk_id = 0;
  int layer = 0;
  KvCodec codec = KvCodec::kNone;
  // Keys, values and probe keys as stored: contiguous host tensors of
  // EncodedBytes(codec, ...) bytes each (uint8; the parts themselves under kNone).
  std::array<at::Tensor, 3> bytes;
  // The same parts [C, heads, d] in the KV dtype as every later read returns
  // them (the parts themselves under kNone); views that may share storage.
  std::array<at::Tensor, 3> decoded;
  // The keys' digest (codec/key_digest.h) when the store keeps digests, else undefined.
  at::Tensor digest;

  // Whether the keys' and values' stored bytes are held (what a cache keeps
  // of a chunk's encoded form: bytes[0] and bytes[1], nothing decoded).
  bool holds_kv() const { return bytes[0].defined() && bytes[1].defined(); }
  // Their size; 0 when they are not held.
  int64_t kv_bytes() const { return holds_kv() ? static_cast<int64_t>(bytes[0].nbytes() + bytes[1].nbytes()) : 0; }
};

// The store's one encode step: chunks first_index.. of a prefix stored with
// `codec` (each with its own ChunkCodec), as ids first_id.. of layer `layer`,
// from token-major parts [n*C, heads, d] with C = chunk_tokens, appended to `out`.
// With `digest` set, each chunk also gets the digest of its keys as they decode, in that codec.
// REQUIRES: contiguous host tensors; fp16 unless `codec` is kNone.
void EncodeForStore(KvCodec codec, int64_t chunk_tokens, int layer, uint64_t first_id, int64_t first_index,
                    const at::Tensor& k, const at::Tensor& v, const at::Tensor& probe,
                    std::optional<DigestCodec> digest, std::vector<EncodedChunk>* out);

}  // namespace impress
