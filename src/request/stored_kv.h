// The one computation of the KV a store holds for a prefix (docs/store.md,
// "One KV for one prefix"). Every writer of chunk data (the fill, a request
// that stores a new tail, a request that heals a damaged or missing chunk)
// takes its KV from here, so a chunk's bytes depend on its tokens alone,
// never on which path computed them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/kv_provider.h"

namespace impress {

class Model;

// The KV of `tokens` from position 0, computed one chunk of `chunk_tokens`
// per forward pass, each pass attending to the earlier chunks' KV as computed
// (the model's dtype, before any store rounding); a short last piece is a
// pass of its own. Chunk i's KV is then a function of tokens[0, (i+1)C) and
// the model alone: one pass over a whole prefix would round differently
// with the pass's length (the matrix products block by it), so the KV of a
// chunk would depend on what followed it. Bitwise reproducible for one
// build, device and thread count. REQUIRES: chunk_tokens > 0.
std::unique_ptr<DenseKvCache> ComputeStoredKv(Model& model, const std::vector<int32_t>& tokens, int64_t chunk_tokens);

}  // namespace impress
