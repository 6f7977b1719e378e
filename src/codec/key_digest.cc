#include "codec/key_digest.h"

#include <cstring>

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

void SplitInt8DigestRows(const at::Tensor& digest, const Int8Keys& out, int64_t row0, int64_t tokens) {
  const at::Tensor& codes = out.codes;
  const at::Tensor& scales = out.scales;
  IMPRESS_CHECK(digest.is_cpu() && digest.is_contiguous() && codes.is_cpu() && codes.is_contiguous() &&
                codes.scalar_type() == at::kChar && codes.dim() == 3 && scales.is_cpu() && scales.is_contiguous() &&
                scales.scalar_type() == at::kFloat && scales.dim() == 2 && row0 >= 0 && row0 + tokens <= codes.size(1));
  const int64_t heads = codes.size(0), rows = codes.size(1), dim = codes.size(2);
  IMPRESS_CHECK(digest.numel() == static_cast<int64_t>(DigestBytes(DigestCodec::kInt8, static_cast<int>(tokens),
                                                                   static_cast<int>(heads), static_cast<int>(dim))));
  // The int8 codec's layout (codec/kv_codec.h's Int8Layout): codes [C, heads, d], then fp16 scales [C, heads].
  const auto* src = digest.data_ptr<uint8_t>();
  const auto* src_scales = src + Int8Layout{static_cast<size_t>(tokens * heads), static_cast<size_t>(dim)}.scales_offset();
  auto* c = codes.data_ptr<int8_t>();
  float* s = scales.data_ptr<float>();
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(c + (h * rows + row0 + t) * dim, src + (t * heads + h) * dim, static_cast<size_t>(dim));
      uint16_t s16;
      std::memcpy(&s16, src_scales + 2 * (t * heads + h), 2);
      s[h * rows + row0 + t] = HalfToFloat(s16);
    }
}

}  // namespace impress
