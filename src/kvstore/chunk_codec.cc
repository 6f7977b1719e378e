#include "kvstore/chunk_codec.h"

#include <ATen/ATen.h>

#include <cstring>

#include "codec/kv_codec_tensor.h"
#include "common/device_copy.h"

namespace impress {

namespace {

at::Tensor OwnStorage(const at::Tensor& t) {
  return t.storage_offset() == 0 && t.storage().nbytes() == t.nbytes() ? t : t.clone();
}

}  // namespace

void EncodeStoredChunks(const ChunkGeometry& g, at::ScalarType kv_type, const DenseKvCache& kv, int l, int64_t first,
                        int64_t n, int64_t kv_offset, uint64_t first_id, std::vector<EncodedChunk>* out) {
  const int64_t c = g.chunk_tokens;
  // [Hkv, T, d] -> token-major [T, Hkv, d] in the stored dtype, on the host.
  at::Tensor k = kv.keys(l).narrow(1, first * c - kv_offset, n * c).transpose(0, 1).to(at::kCPU, kv_type).contiguous();
  at::Tensor v = kv.values(l).narrow(1, first * c - kv_offset, n * c).transpose(0, 1).to(at::kCPU, kv_type).contiguous();
  at::Tensor p = k.narrow(1, 0, g.probe_kv_heads).contiguous();
  EncodeForStore(g.codec, c, l, first_id, first, k, v, p, g.digests, out);
}

ChunkKv CacheEntry(const EncodedChunk& e) {
  ChunkKv kv{OwnStorage(e.decoded[0]), OwnStorage(e.decoded[1])};
  if (e.codec != KvCodec::kNone) {  // its keys' and values' bytes, nothing decoded
    kv.enc.chunk_id = e.chunk_id, kv.enc.layer = e.layer, kv.enc.codec = e.codec;
    kv.enc.bytes = {e.bytes[0], e.bytes[1], at::Tensor()};
  }
  return kv;
}

void DecodeChunkPart(const ChunkGeometry& g, int part, KvCodec codec, const uint8_t* bytes, at::Tensor* out) {
  const int heads = part == 2 ? g.probe_kv_heads : g.kv_heads;
  if (codec == KvCodec::kNone) {
    std::memcpy(out->data_ptr(), bytes, g.PartBytes(part, codec));
    return;
  }
  DecodeKv(codec, part == 1 ? KvRole::kValues : KvRole::kKeys, bytes, g.chunk_tokens, heads, g.head_dim,
           static_cast<uint16_t*>(out->data_ptr()));
}

at::Tensor DecodeChunkPartOn(const ChunkGeometry& g, int part, KvCodec codec, const at::Tensor& bytes,
                             at::ScalarType kv_type) {
  const int heads = part == 2 ? g.probe_kv_heads : g.kv_heads;
  if (codec == KvCodec::kNone)
    return bytes.narrow(0, 0, static_cast<int64_t>(g.PartBytes(part, codec))).view(kv_type).view({g.chunk_tokens, heads, g.head_dim});
  return DecodePartOn(codec, part == 1 ? KvRole::kValues : KvRole::kKeys, bytes, g.chunk_tokens, heads, g.head_dim)
      .to(kv_type);
}

void DecodeChunkKv(const ChunkGeometry& g, at::ScalarType kv_type, const at::Device& device, ChunkKv* kv) {
  if (device.is_cuda()) {
    kv->k = DecodeChunkPartOn(g, 0, kv->enc.codec, ToDevice(kv->enc.bytes[0], device), kv_type);
    kv->v = DecodeChunkPartOn(g, 1, kv->enc.codec, ToDevice(kv->enc.bytes[1], device), kv_type);
    kv->ready = StreamPoint(device);
    return;
  }
  const auto opts = at::TensorOptions().dtype(kv_type);
  kv->k = at::empty({g.chunk_tokens, g.kv_heads, g.head_dim}, opts);
  kv->v = at::empty({g.chunk_tokens, g.kv_heads, g.head_dim}, opts);
  DecodeChunkPart(g, 0, kv->enc.codec, kv->enc.bytes[0].data_ptr<uint8_t>(), &kv->k);
  DecodeChunkPart(g, 1, kv->enc.codec, kv->enc.bytes[1].data_ptr<uint8_t>(), &kv->v);
}

}  // namespace impress
