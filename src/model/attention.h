// Attention of the new tokens over [prefix KV ; their own KV], causal among
// the new tokens (or within each segment, LayerQkv::attend_new). Shared by
// every architecture.
#pragma once

#include <ATen/core/Tensor.h>

#include "model/kv_provider.h"

namespace impress {

// Returns [T, num_heads * head_dim]. Query head h uses KV head h / (Hq / Hkv).
// Softmax runs in fp32 whatever the compute dtype. Work is split into blocks of
// query rows so that memory stays O(block * (P + T)).
// On the CPU in fp32 the fused kernel of model/attention_cpu.h, elsewhere
// AttendLibTorch.
at::Tensor Attend(const LayerQkv& qkv, const PrefixKv& prefix);

// The same from LibTorch's kernels: its fused attention where every prefix
// token is visible to every head, else matmuls and a masked softmax.
at::Tensor AttendLibTorch(const LayerQkv& qkv, const PrefixKv& prefix);

}  // namespace impress
