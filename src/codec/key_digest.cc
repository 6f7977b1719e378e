#include "codec/key_digest.h"

#include "codec/kv_codec_tensor.h"
#include "common/status.h"

namespace impress {

size_t DigestBytes(int tokens, int heads, int dim) {
  return EncodedBytes(kDigestCodec, KvRole::kKeys, tokens, heads, dim);
}

at::Tensor EncodeDigest(const at::Tensor& keys) { return EncodePart(kDigestCodec, KvRole::kKeys, keys); }

at::Tensor DecodeDigest(const at::Tensor& digest, int64_t tokens, int64_t heads, int64_t dim) {
  if (digest.device().is_cpu()) return DecodePart(kDigestCodec, KvRole::kKeys, digest, tokens, heads, dim);
  return DecodePartOn(kDigestCodec, KvRole::kKeys, digest, tokens, heads, dim);  // the same numbers, bit for bit
}

void DecodeDigestRows(const at::Tensor& digest, at::Tensor out, int64_t row0, int64_t tokens) {
  IMPRESS_CHECK(digest.is_cpu() && digest.is_contiguous() && out.is_cpu() && out.scalar_type() == at::kFloat &&
                out.dim() == 3 && out.stride(2) == 1 && out.stride(1) == out.size(2) && row0 >= 0 &&
                row0 + tokens <= out.size(1));
  DecodeKvFloat(kDigestCodec, KvRole::kKeys, digest.data_ptr<uint8_t>(), static_cast<int>(tokens),
                static_cast<int>(out.size(0)), static_cast<int>(out.size(2)),
                out.data_ptr<float>() + row0 * out.stride(1), out.stride(1), out.stride(0));
}

}  // namespace impress
