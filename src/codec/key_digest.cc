#include "codec/key_digest.h"

#include "codec/kv_codec_tensor.h"
#include "common/status.h"

namespace impress {
namespace {

// The key codec a digest is encoded with.
KvCodec KeyCodec(DigestCodec c) { return c == DigestCodec::kInt8 ? KvCodec::kInt8 : KvCodec::kInt4; }

}  // namespace

const std::vector<std::string>& DigestCodecNames() {
  static const std::vector<std::string> names = {"int4", "int8"};
  return names;
}

size_t DigestBytes(DigestCodec codec, int tokens, int heads, int dim) {
  return EncodedBytes(KeyCodec(codec), KvRole::kKeys, tokens, heads, dim);
}

at::Tensor EncodeDigest(DigestCodec codec, const at::Tensor& keys) {
  return EncodePart(KeyCodec(codec), KvRole::kKeys, keys);
}

at::Tensor DecodeDigest(DigestCodec codec, const at::Tensor& digest, int64_t tokens, int64_t heads, int64_t dim) {
  const KvCodec c = KeyCodec(codec);
  if (digest.device().is_cpu()) return DecodePart(c, KvRole::kKeys, digest, tokens, heads, dim);
  return DecodePartOn(c, KvRole::kKeys, digest, tokens, heads, dim);  // the same numbers, bit for bit
}

void DecodeDigestRows(DigestCodec codec, const at::Tensor& digest, at::Tensor out, int64_t row0, int64_t tokens) {
  IMPRESS_CHECK(digest.is_cpu() && digest.is_contiguous() && out.is_cpu() && out.scalar_type() == at::kFloat &&
                out.dim() == 3 && out.stride(2) == 1 && out.stride(1) == out.size(2) && row0 >= 0 &&
                row0 + tokens <= out.size(1));
  DecodeKvFloat(KeyCodec(codec), KvRole::kKeys, digest.data_ptr<uint8_t>(), static_cast<int>(tokens),
                static_cast<int>(out.size(0)), static_cast<int>(out.size(2)),
                out.data_ptr<float>() + row0 * out.stride(1), out.stride(1), out.stride(0));
}

}  // namespace impress
