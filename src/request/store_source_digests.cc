// StoreSource's digests (request/store_source.h): the store's resident
// chunk digests of a lease, in token order, as the digest system scores them.
#include <ATen/ATen.h>

#include "codec/key_digest.h"
#include "common/device_copy.h"
#include "model/model.h"
#include "request/store_source.h"

namespace impress {

Status StoreSource::ForEachDigest(int layer, const std::function<void(const at::Tensor&, int64_t)>& put,
                                  int64_t* bytes) const {
  const int64_t c = store_.geometry().chunk_tokens;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const at::Tensor d = store_.Digest(chunks_[i], layer);
    if (!d.defined())
      return Status::InvalidArgument(store_.options().dir + ": chunk " + std::to_string(chunks_[i]) + " layer " +
                                     std::to_string(layer) + " has no digest (the store keeps none, or the chunk "
                                     "lives only below the disk)");
    put(d, static_cast<int64_t>(i) * c);
    *bytes += static_cast<int64_t>(d.nbytes());
  }
  return Status::OK();
}

Status StoreSource::AssembleInt8(int layer, Int8Keys* keys, int64_t* bytes, DeviceSpans* spans) const {
  const ChunkGeometry& g = store_.geometry();
  IMPRESS_CHECK(g.digests);  // RunRequest refuses a store without them (CheckDigests)
  if (*g.digests != DigestCodec::kInt8)
    return Status::InvalidArgument(store_.options().dir + ": its digests are " +
                                   DigestCodecNames()[static_cast<size_t>(*g.digests)] + ", not int8");
  // Every chunk's codes and scales in stored order, then in token order.
  const int64_t c = g.chunk_tokens, p = tokens();
  Int8Keys all{at::empty({g.kv_heads, p, g.head_dim}, at::kChar), at::empty({g.kv_heads, p}, at::kFloat)};
  RETURN_IF_ERROR(ForEachDigest(layer, [&](const at::Tensor& d, int64_t row0) { SplitInt8DigestRows(d, all, row0, c); },
                                bytes));
  if (lease_.reordered()) {
    const at::Tensor order = TokenOrder(layer).to(at::kCPU, at::kLong);
    all = Int8Keys{all.codes.index_select(1, order), all.scales.index_select(1, order)};
  }
  if (spans != nullptr) spans->Open();
  *keys = Int8Keys{all.codes.to(model_.device()), all.scales.to(model_.device())};
  if (spans != nullptr) spans->Close();
  return Status::OK();
}

Status StoreSource::DigestInt8(int layer, Int8Keys* keys) {
  IMPRESS_CHECK(layer == layer_);
  if (digests_.codes.defined()) {  // put together by the read-ahead
    store_.load_stream().HandOver(digests_.codes);
    store_.load_stream().HandOver(digests_.scales);
    *keys = digests_;
    return Status::OK();
  }
  int64_t bytes = 0;  // put together now: the copy up is the layer's on-demand device work
  Status s = AssembleInt8(layer, keys, &bytes, &demand_spans_[layer_]);
  trace_->digest_bytes += bytes;
  return s;
}

Status StoreSource::DigestKeys(int layer, at::Tensor* k) {
  IMPRESS_CHECK(layer == layer_);
  const ChunkGeometry& g = store_.geometry();
  IMPRESS_CHECK(g.digests);  // as DigestInt8
  const int64_t c = g.chunk_tokens, p = tokens();
  // Every chunk decoded in fp32 into one buffer [Hkv, P + room, d] in stored
  // order (with room, as Keys and ProbeKeys leave), then in token order.
  at::Tensor all = at::empty({g.kv_heads, p + key_room_, g.head_dim}, at::kFloat);
  int64_t bytes = 0;
  Status s = ForEachDigest(layer, [&](const at::Tensor& d, int64_t row0) { DecodeDigestRows(*g.digests, d, all, row0, c); },
                           &bytes);
  trace_->digest_bytes += bytes;
  RETURN_IF_ERROR(s);
  at::Tensor keys = all.narrow(1, 0, p);
  if (lease_.reordered()) keys = keys.index_select(1, TokenOrder(layer).to(at::kCPU, at::kLong));  // no room left
  *k = OnModelDevice(keys, model_.dtype());
  return Status::OK();
}

}  // namespace impress
