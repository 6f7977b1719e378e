// A chunk's key digest: its keys [C, Hkv, d] at 4 bits (or 8), each channel
// quantized between its minimum and maximum over the chunk's tokens (the
// int4 or int8 key codec, KIVI's grouping). It holds Quest's digest (per channel the
// min and the max: codes 0 and 15 decode to them) and, per token, where its
// key lies between them: enough to rank a chunk's tokens for a query
// without reading its keys. At 8 bits it ranks as the keys themselves do,
// at twice the bytes (docs/systems.md, the digest codec). The digest system (select/digest.cc) scores
// chunks from it; a store that keeps digests writes one per (chunk, layer)
// and holds them all in host memory (store/chunk_store.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "codec/kv_codec.h"

namespace impress {

// The bits a digest keeps per key value. A store records its digests'
// (MANIFEST "digest_codec", absent: int4): names are appended, never renamed.
enum class DigestCodec : uint8_t { kInt4, kInt8 };
const std::vector<std::string>& DigestCodecNames();  // "int4", "int8": indexed by DigestCodec

// Bytes of the digest of a chunk of `tokens` tokens, `heads` KV heads of `dim`.
size_t DigestBytes(DigestCodec codec, int tokens, int heads, int dim);
// The digest (uint8, DigestBytes long) of keys [C, heads, d] (any floating dtype; rounded to fp16 first).
at::Tensor EncodeDigest(DigestCodec codec, const at::Tensor& keys);
// The keys a digest gives: [C, heads, d] fp16, on the digest's device.
at::Tensor DecodeDigest(DigestCodec codec, const at::Tensor& digest, int64_t tokens, int64_t heads, int64_t dim);
// The keys a digest of C tokens gives in fp32, not rounded to fp16, into rows
// [row0, row0 + C) of each head of `out` [heads, R, d] (fp32, host, rows of d
// contiguous floats; a view of a larger buffer may leave room after R).
// REQUIRES: `digest` contiguous on the host.
void DecodeDigestRows(DigestCodec codec, const at::Tensor& digest, at::Tensor out, int64_t row0, int64_t tokens);

// An int8 digest's keys as they are stored, head-major: codes [heads, R, d]
// int8 and scales [heads, R] fp32; each key is its codes times its scale,
// the values DecodeDigestRows gives, bit for bit.
struct Int8Keys {
  at::Tensor codes, scales;
};
// The codes and scales of an int8 digest of C tokens into rows
// [row0, row0 + C) of `out`'s tensors (host, contiguous, rows as allocated).
// REQUIRES: `digest` an int8 digest, contiguous on the host.
void SplitInt8DigestRows(const at::Tensor& digest, const Int8Keys& out, int64_t row0, int64_t tokens);

}  // namespace impress
