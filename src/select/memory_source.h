// Prefix KV held in memory as one tensor per layer: the source `eval`
// selects from. Its chunks are consecutive runs of `chunk_tokens` positions
// (the last may be short); every read is a view or a gather, never an error.
#pragma once

#include <ATen/core/Tensor.h>

#include "codec/key_digest.h"
#include "select/method.h"

namespace impress {

class MemorySource final : public PrefixSource {
 public:
  // keys and values [Hkv, P, d] of the one layer being selected (undefined: P = 0);
  // DigestKeys gives them through digests of `digest` bits.
  MemorySource(at::Tensor k, at::Tensor v, int64_t chunk_tokens, DigestCodec digest);
  int64_t tokens() const override { return p_; }
  int64_t chunks() const override { return (p_ + c_ - 1) / c_; }
  at::Tensor ChunkOf(int layer) override;
  Status All(int layer, at::Tensor* k, at::Tensor* v) override;
  Status Keys(int layer, at::Tensor* k) override;
  Status ProbeKeys(int layer, int64_t kv_heads, at::Tensor* k) override;
  Status Values(int layer, const at::Tensor& used, at::Tensor* v) override;
  Status Gather(int layer, const at::Tensor& positions, at::Tensor* k, at::Tensor* v) override;
  // Each chunk's keys through the digest and back (DigestRoundTrip), on each call.
  Status DigestKeys(int layer, at::Tensor* k) override;
  // Each chunk's int8 digest, made on each call (the keys as DigestRoundTrip's at int8).
  Status DigestInt8(int layer, Int8Keys* keys) override;

 private:
  at::Tensor k_, v_;
  int64_t p_, c_;
  DigestCodec digest_;
};

}  // namespace impress
