#include "select/kv_codec_tensor.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

namespace impress {

at::Tensor EncodePart(KvCodec codec, KvRole role, const at::Tensor& part) {
  const at::Tensor half = part.to(at::kCPU, at::kHalf).contiguous();
  const int t = static_cast<int>(half.size(0)), h = static_cast<int>(half.size(1)), d = static_cast<int>(half.size(2));
  at::Tensor out = at::empty({static_cast<int64_t>(EncodedBytes(codec, role, t, h, d))}, at::kByte);
  EncodeKv(codec, role, static_cast<const uint16_t*>(half.data_ptr()), t, h, d, out.data_ptr<uint8_t>());
  return out;
}

at::Tensor DecodePart(KvCodec codec, KvRole role, const at::Tensor& bytes, int64_t tokens, int64_t heads, int64_t dim) {
  at::Tensor out = at::empty({tokens, heads, dim}, at::kHalf);
  const at::Tensor in = bytes.contiguous();
  DecodeKv(codec, role, in.data_ptr<uint8_t>(), static_cast<int>(tokens), static_cast<int>(heads), static_cast<int>(dim),
           static_cast<uint16_t*>(out.data_ptr()));
  return out;
}

void RoundTripPrefix(KvCodec codec, int64_t chunk_tokens, int64_t tokens, at::Tensor k, at::Tensor v) {
  if (codec == KvCodec::kNone) return;
  c10::InferenceMode inference;  // the model's KV caches are inference tensors
  const int64_t heads = k.size(0), dim = k.size(2);
  for (int64_t i = 0; (i + 1) * chunk_tokens <= tokens; ++i) {
    const KvCodec c = ChunkCodec(codec, i);
    for (auto [x, role] : {std::pair<at::Tensor, KvRole>{k, KvRole::kKeys}, {v, KvRole::kValues}}) {
      at::Tensor slot = x.narrow(1, i * chunk_tokens, chunk_tokens);           // [heads, C, dim]
      at::Tensor part = EncodePart(c, role, slot.transpose(0, 1));            // token-major, as stored
      slot.copy_(DecodePart(c, role, part, chunk_tokens, heads, dim).transpose(0, 1));
    }
  }
}

}  // namespace impress
