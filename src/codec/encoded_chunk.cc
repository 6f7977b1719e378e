#include "codec/encoded_chunk.h"

#include <ATen/ATen.h>

#include "codec/key_digest.h"
#include "codec/kv_codec_tensor.h"

namespace impress {
namespace {

// Chunk `chunk_id` of layer `layer`: token-major parts [C, heads, d] (keys,
// values, probe keys) encoded with `codec`.
EncodedChunk EncodeChunk(uint64_t chunk_id, int layer, KvCodec codec, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& probe) {
  EncodedChunk e;
  e.chunk_id = chunk_id;
  e.layer = layer;
  e.codec = codec;
  const at::Tensor parts[3] = {k, v, probe};
  for (int p = 0; p < 3; ++p) {
    if (codec == KvCodec::kNone) {
      e.bytes[p] = e.decoded[p] = parts[p];
      continue;
    }
    const KvRole role = p == 1 ? KvRole::kValues : KvRole::kKeys;
    e.bytes[p] = EncodePart(codec, role, parts[p]);
    e.decoded[p] = DecodePart(codec, role, e.bytes[p], parts[p].size(0), parts[p].size(1), parts[p].size(2));
  }
  return e;
}

}  // namespace

void EncodeForStore(KvCodec codec, int64_t chunk_tokens, int layer, uint64_t first_id, int64_t first_index,
                    const at::Tensor& k, const at::Tensor& v, const at::Tensor& probe,
                    std::optional<DigestCodec> digest, std::vector<EncodedChunk>* out) {
  const int64_t c = chunk_tokens, n = k.size(0) / c;
  for (int64_t i = 0; i < n; ++i) {
    out->push_back(EncodeChunk(first_id + static_cast<uint64_t>(i), layer, ChunkCodec(codec, first_index + i),
                               k.narrow(0, i * c, c), v.narrow(0, i * c, c), probe.narrow(0, i * c, c)));
    if (digest) out->back().digest = EncodeDigest(*digest, out->back().decoded[0]);
  }
}

}  // namespace impress
