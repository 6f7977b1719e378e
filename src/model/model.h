// A causal language model: config, weights on a device, and one forward pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "model/config.h"
#include "model/kv_provider.h"

namespace impress {

struct LoadOptions {
  std::string device = "auto";  // "cpu", "cuda", or "auto" (cuda when LibTorch sees a GPU)
  std::string dtype = "auto";   // "float32", "float16", "bfloat16", or "auto" (fp32 on CPU, fp16 on CUDA)
};

struct ForwardOptions {
  bool all_logits = false;  // false: logits of the last token only
  // Lengths of consecutive independent segments of the tokens (summing to
  // T): each starts at start_pos and attends to the prefix and causally to
  // itself, never to another segment, so one pass scores several
  // continuations of one context. Every segment's KV is appended, in order:
  // the caller rewinds the provider before running anything after them.
  // Empty: one segment.
  std::vector<int64_t> segments;
};

class Model {
 public:
  virtual ~Model() = default;
  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // Runs `tokens` at absolute positions start_pos, start_pos + 1, ... over the
  // prefix KV that `kv` provides layer by layer. Returns fp32 logits
  // [T, vocab] (opt.all_logits) or [1, vocab].
  // REQUIRES: tokens non-empty, ids < vocab_size, start_pos + T <= max_positions.
  virtual at::Tensor Forward(const std::vector<int32_t>& tokens, int64_t start_pos, KvProvider& kv,
                             const ForwardOptions& opt = {}) = 0;

  // For architecture factories: what this model is and where it computes.
  void SetIdentity(const ModelConfig& config, const std::string& dir, at::Device device, at::ScalarType dtype) {
    config_ = config;
    dir_ = dir;
    device_ = device;
    dtype_ = dtype;
  }

 protected:
  ModelConfig config_;
  std::string dir_;
  at::Device device_ = at::kCPU;
  at::ScalarType dtype_ = at::kFloat;
};

// Loads a Hugging Face model directory (config.json + safetensors). The
// architecture comes from config.json's model_type through a registry.
StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opt = {});

// Checks ids and length against the model before a forward pass; the error
// names what is wrong (e.g. a prompt longer than the context).
Status ValidateTokens(const ModelConfig& c, const std::vector<int32_t>& tokens, int64_t start_pos);

}  // namespace impress
