// The shape of a stored (chunk, layer): three parts (four with a key digest),
// their sizes under each codec, each padded to kPartAlign so that it can be
// read alone with direct I/O. What the disk store (store/chunk_layout.h) and
// the shared remote tier (remote/remote_store.h) both lay chunks out by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "codec/key_digest.h"
#include "codec/kv_codec.h"

namespace impress {

// Every part starts and is padded to this (the direct I/O alignment).
constexpr size_t kPartAlign = 4096;

struct ChunkGeometry {
  int chunk_tokens = 64;
  int layers = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int probe_kv_heads = 1;
  int elem_bytes = 2;  // fp16 or bf16; 4 for fp32
  // How parts are stored (codec/kv_codec.h): the values themselves, or
  // quantized. A chunk may be stored with another codec than the store's
  // (int4 stores keep a prefix's first chunk at int8): ChunkLocation says.
  KvCodec codec = KvCodec::kNone;
  // The codec of the keys' digest (codec/key_digest.h) each (chunk, layer)
  // also stores as part 3, whatever `codec` is; none: part 3 has no bytes.
  std::optional<DigestCodec> digests;

  // Bytes of part 0 (keys), 1 (values), 2 (probe keys) or 3 (digest) stored with `c`.
  size_t PartBytes(int part, KvCodec c) const;
  size_t KeyBytes() const { return PartBytes(0, codec); }
  size_t ValueBytes() const { return PartBytes(1, codec); }
  size_t ProbeBytes() const { return PartBytes(2, codec); }
  // The largest part any chunk of this store has (a buffer that fits every chunk's).
  size_t MaxPartBytes(int part) const;
  // Padded size of a part stored with `c` (default: the store's codec).
  size_t PartStride(int part, KvCodec c) const;
  size_t PartStride(int part) const { return PartStride(part, codec); }
  size_t DigestBytes() const { return PartBytes(3, codec); }
  // Bytes one (chunk, layer) takes in chunks.dat: its padded parts.
  size_t RecordBytes(KvCodec c) const {
    return PartStride(0, c) + PartStride(1, c) + PartStride(2, c) + PartStride(3, c);
  }
  size_t RecordBytes() const { return RecordBytes(codec); }
  // Bytes of one decoded part: keys or values [chunk_tokens][kv_heads][head_dim] in the KV dtype.
  size_t KvBytes() const { return size_t(chunk_tokens) * kv_heads * head_dim * elem_bytes; }
};

enum ChunkPart : uint8_t { kKeys = 1, kValues = 2, kProbeKeys = 4, kDigest = 8 };
constexpr int kChunkParts = 4;  // the most parts a (chunk, layer) has

}  // namespace impress
