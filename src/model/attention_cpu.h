// Fused fp32 attention for the CPU: the new tokens' queries against
// [prefix KV ; their own KV], a block of one head's query rows at a time,
// over tiles of keys packed once for every query head of their KV group.
// A block's scores stay in per-thread scratch (cache-sized, never a whole
// matrix); each row's exact max comes first, so a weight does not depend on
// the order of the prefix's tokens (a reordered store gives the same
// weights as position order; only the sums' order differs).
#pragma once

#include <ATen/core/Tensor.h>

#include "model/kv_provider.h"

namespace impress {

// Writes Attend's result (model/attention.h: [T, Hq * d], query head h on
// KV head h / (Hq / Hkv), prefix tokens hidden per head by prefix.keep,
// causal among the new tokens) to *out and returns true where it applies:
// q, k, v and the prefix float32 on the CPU, head_dim 16, 32, 64 or 128,
// no LayerQkv::attend_new, and a CPU with AVX-512F. Elsewhere returns false
// and leaves *out alone. Scores, softmax and sums are fp32; results match
// the exact definition to float rounding, not bit for bit.
bool AttendCpu(const LayerQkv& x, const PrefixKv& prefix, at::Tensor* out);

}  // namespace impress
