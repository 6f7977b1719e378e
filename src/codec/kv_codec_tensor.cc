#include "codec/kv_codec_tensor.h"

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

at::Tensor DecodePartOn(KvCodec codec, KvRole role, const at::Tensor& bytes, int64_t tokens, int64_t heads,
                        int64_t dim) {
  codec = PartCodec(codec, role);
  const int64_t n = tokens * heads * dim;
  const at::Tensor b = bytes.contiguous();
  // Half-precision parameters stored after the quantized values, as floats.
  auto halves = [&](int64_t offset, int64_t count) {
    const at::Tensor raw = b.narrow(0, offset, 2 * count);
    return (offset % 2 == 0 ? raw : raw.clone()).view(at::kHalf).to(at::kFloat);  // a view needs 2-byte alignment
  };
  if (codec == KvCodec::kNone) return b.narrow(0, 0, 2 * n).view(at::kHalf).view({tokens, heads, dim});
  if (codec == KvCodec::kInt8) {  // q [T, H, D] int8, then s [T, H]
    const Int8Layout l{static_cast<size_t>(tokens * heads), static_cast<size_t>(dim)};
    const at::Tensor q = b.narrow(0, 0, n).view(at::kChar).to(at::kFloat).view({tokens, heads, dim});
    return q.mul(halves(static_cast<int64_t>(l.scales_offset()), tokens * heads).view({tokens, heads, 1})).to(at::kHalf);
  }
  // int4: element 2j in byte j's low nibble, 2j + 1 in its high one.
  const at::Tensor packed = b.narrow(0, 0, n / 2);
  const at::Tensor q = at::stack({packed.bitwise_and(15), packed.bitwise_right_shift(4)}, 1).to(at::kFloat).view({n});
  at::Tensor scale, zero;
  if (role == KvRole::kKeys) {  // per channel: [H, D] for every token
    const int64_t groups = heads * dim;
    scale = halves(n / 2, groups).view({1, heads, dim});
    zero = halves(n / 2 + 2 * groups, groups).view({1, heads, dim});
    return q.view({tokens, heads, dim}).mul(scale).add(zero).to(at::kHalf);
  }
  const int64_t group = Int4Group(static_cast<int>(dim)), groups = n / group;  // values: per group along dim
  scale = halves(n / 2, groups).view({groups, 1});
  zero = halves(n / 2 + 2 * groups, groups).view({groups, 1});
  return q.view({groups, group}).mul(scale).add(zero).to(at::kHalf).view({tokens, heads, dim});
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
