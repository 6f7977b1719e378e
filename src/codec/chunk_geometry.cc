#include "codec/chunk_geometry.h"

#include <algorithm>

namespace impress {
namespace {

size_t RoundUp(size_t n) { return (n + kPartAlign - 1) / kPartAlign * kPartAlign; }

}  // namespace

size_t ChunkGeometry::PartBytes(int part, KvCodec c) const {
  if (part == 3) return digests ? ::impress::DigestBytes(*digests, chunk_tokens, kv_heads, head_dim) : 0;
  const int heads = part == 2 ? probe_kv_heads : kv_heads;
  if (c == KvCodec::kNone) return size_t(chunk_tokens) * heads * head_dim * elem_bytes;
  return EncodedBytes(c, part == 1 ? KvRole::kValues : KvRole::kKeys, chunk_tokens, heads, head_dim);
}

size_t ChunkGeometry::MaxPartBytes(int part) const {
  return std::max(PartBytes(part, codec), PartBytes(part, ChunkCodec(codec, 0)));  // a prefix's first chunk may differ
}

size_t ChunkGeometry::PartStride(int part, KvCodec c) const { return RoundUp(PartBytes(part, c)); }

}  // namespace impress
