// The one seam between model code and prefix-KV management.
//
// For every layer, the model computes the new tokens' queries, keys and values,
// asks a KvProvider for the prefix KV those tokens attend to (in front of them),
// runs attention, and hands the new KV back. Reuse, importance selection and
// tiered storage live behind this interface; the model never knows about them.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace impress {

// One layer's projections of the new tokens.
struct LayerQkv {
  int layer = 0;
  at::Tensor q;  // [num_heads, T, head_dim], RoPE applied, not scaled
  at::Tensor k;  // [num_kv_heads, T, head_dim], RoPE applied (stored form)
  at::Tensor v;  // [num_kv_heads, T, head_dim]
  float scale = 1.0f;  // attention logit scale (head_dim^-0.5)
  // Which new tokens each new token may attend to ([T, T] bool, true = may)
  // when the new tokens are several independent continuations run side by
  // side (ForwardOptions::segments); undefined: causal among all of them.
  at::Tensor attend_new;
};

// The prefix KV one layer attends to. Every prefix token is visible to every
// new token (it comes earlier); `keep` can hide tokens per query head.
struct PrefixKv {
  at::Tensor k;     // [num_kv_heads, P, head_dim]; undefined means P = 0
  at::Tensor v;     // [num_kv_heads, P, head_dim]
  at::Tensor keep;  // optional [num_heads, P] bool on k's device; false hides the token from that head
};

class KvProvider {
 public:
  virtual ~KvProvider() = default;
  // The prefix KV for `qkv.layer`. Called once per layer, in layer order.
  virtual PrefixKv Prefix(const LayerQkv& qkv) = 0;
  // The new tokens' KV of `qkv.layer`, after attention.
  virtual void Append(const LayerQkv& qkv) = 0;
};

// A provider whose held KV can be rolled back: scoring several continuations
// of one context, each run over the context's KV and then forgotten.
class RewindableKv : public KvProvider {
 public:
  using Mark = std::vector<int64_t>;  // per-layer lengths
  virtual Mark Save() const = 0;
  // Forgets everything appended since `mark` was saved.
  virtual void Rewind(const Mark& mark) = 0;
};

// No prefix: the new tokens are the whole sequence (recomputation).
class NoPrefixKv final : public KvProvider {
 public:
  PrefixKv Prefix(const LayerQkv&) override { return {}; }
  void Append(const LayerQkv&) override {}
};

// Keeps every layer's KV in memory and serves all of it as the prefix of the
// next call: incremental decoding, scoring several continuations of one
// context, and the reference for exact reuse. Storage grows geometrically, so
// an append copies only the new tokens.
class DenseKvCache final : public RewindableKv {
 public:
  explicit DenseKvCache(int num_layers) : k_(num_layers), v_(num_layers), len_(num_layers, 0) {}
  PrefixKv Prefix(const LayerQkv& qkv) override;
  void Append(const LayerQkv& qkv) override;
  // Tokens held (the same for every layer once a forward pass has finished).
  int64_t size() const { return len_.empty() ? 0 : len_.back(); }
  // Forgets every token from position n on. REQUIRES: n >= 0
  void Truncate(int64_t n);
  Mark Save() const override { return len_; }
  void Rewind(const Mark& mark) override;
  // Held keys / values of `layer`: [num_kv_heads, size(), head_dim] views.
  at::Tensor keys(int layer) const;
  at::Tensor values(int layer) const;

 private:
  std::vector<at::Tensor> k_, v_;  // [num_kv_heads, capacity, head_dim]
  std::vector<int64_t> len_;
};

}  // namespace impress
