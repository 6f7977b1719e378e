#include "select/memory_source.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace impress {

MemorySource::MemorySource(at::Tensor k, at::Tensor v, int64_t chunk_tokens, DigestCodec digest)
    : k_(std::move(k)), v_(std::move(v)), p_(k_.defined() ? k_.size(1) : 0), c_(chunk_tokens), digest_(digest) {
  IMPRESS_CHECK(c_ > 0);
}

at::Tensor MemorySource::ChunkOf(int) { return at::arange(p_, at::kLong).div(c_, "floor"); }

Status MemorySource::All(int, at::Tensor* k, at::Tensor* v) {
  *k = k_;
  *v = v_;
  return Status::OK();
}

Status MemorySource::Keys(int, at::Tensor* k) {
  *k = k_;
  return Status::OK();
}

Status MemorySource::ProbeKeys(int, int64_t kv_heads, at::Tensor* k) {
  *k = k_.narrow(0, 0, kv_heads);
  return Status::OK();
}

Status MemorySource::Values(int, const at::Tensor&, at::Tensor* v) {
  *v = v_;
  return Status::OK();
}

Status MemorySource::Gather(int, const at::Tensor& positions, at::Tensor* k, at::Tensor* v) {
  const at::Tensor idx = positions.to(k_.device());
  *k = k_.index_select(1, idx);
  *v = v_.index_select(1, idx);
  return Status::OK();
}

Status MemorySource::DigestKeys(int, at::Tensor* k) {
  *k = DigestRoundTrip(k_, c_, digest_);
  return Status::OK();
}

Status MemorySource::DigestInt8(int, Int8Keys* keys) {
  if (digest_ != DigestCodec::kInt8) return Status::InvalidArgument("the prefix's digests are not int8");
  const at::Tensor host = k_.to(at::kCPU, at::kHalf).transpose(0, 1).contiguous();  // [P, Hkv, d]
  Int8Keys out{at::empty({k_.size(0), p_, k_.size(2)}, at::kChar), at::empty({k_.size(0), p_}, at::kFloat)};
  for (int64_t s = 0; s < p_; s += c_) {
    const int64_t n = std::min(c_, p_ - s);
    SplitInt8DigestRows(EncodeDigest(DigestCodec::kInt8, host.narrow(0, s, n).contiguous()), out, s, n);
  }
  *keys = Int8Keys{out.codes.to(k_.device()), out.scales.to(k_.device())};
  return Status::OK();
}

}  // namespace impress
