#include "codec/key_digest.h"

#include "codec/kv_codec_tensor.h"

namespace impress {

size_t DigestBytes(int tokens, int heads, int dim) {
  return EncodedBytes(kDigestCodec, KvRole::kKeys, tokens, heads, dim);
}

at::Tensor EncodeDigest(const at::Tensor& keys) { return EncodePart(kDigestCodec, KvRole::kKeys, keys); }

at::Tensor DecodeDigest(const at::Tensor& digest, int64_t tokens, int64_t heads, int64_t dim) {
  if (digest.device().is_cpu()) return DecodePart(kDigestCodec, KvRole::kKeys, digest, tokens, heads, dim);
  return DecodePartOn(kDigestCodec, KvRole::kKeys, digest, tokens, heads, dim);  // the same numbers, bit for bit
}

}  // namespace impress
