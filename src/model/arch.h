// What the architectures share: their table rows' functions (one file per
// architecture, opt.cc and llama.cc, defines its three; architecture.cc lists
// them) and the small helpers their forward passes use.
#pragma once

#include <memory>

#include "model/architecture.h"
#include "model/model.h"
#include "model/weights.h"

namespace impress {

// Each architecture's row of the table (model/architecture.h).
Status ParseOptConfig(ConfigReader& r, ModelConfig* c);
void DescribeOpt(const ModelConfig& c, nlohmann::ordered_json* info);
StatusOr<std::unique_ptr<Model>> CreateOptModel(const ModelConfig& config, const WeightLoader& weights);
Status ParseLlamaConfig(ConfigReader& r, ModelConfig* c);
void DescribeLlama(const ModelConfig& c, nlohmann::ordered_json* info);
StatusOr<std::unique_ptr<Model>> CreateLlamaModel(const ModelConfig& config, const WeightLoader& weights);

// Small helpers shared by architectures.
at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);
// residual + x w^T + b, with the residual add fused into the GEMM.
at::Tensor LinearResidual(const at::Tensor& residual, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);
// [T, H*d] -> [H, T, d] (a view when x is contiguous)
at::Tensor SplitHeads(const at::Tensor& x, int64_t heads, int64_t head_dim);
// Embedding rows for `tokens`, on `table`'s device.
at::Tensor EmbedTokens(const at::Tensor& table, const std::vector<int32_t>& tokens);
// Absolute positions of `t` tokens run from start_pos ([T] int64 on
// `device`): start_pos + i, restarting at start_pos in each of `segments`
// (ForwardOptions::segments). REQUIRES: segments empty or summing to t.
at::Tensor TokenPositions(int64_t start_pos, int64_t t, const std::vector<int64_t>& segments, at::Device device);
// LayerQkv::attend_new for `segments`: block-diagonal causal. Undefined for
// fewer than two segments (plain causal).
at::Tensor SegmentMask(const std::vector<int64_t>& segments, at::Device device);

}  // namespace impress
