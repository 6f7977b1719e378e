#include "request/stored_kv.h"

#include <algorithm>

#include "model/model.h"

namespace impress {

std::unique_ptr<DenseKvCache> ComputeStoredKv(Model& model, const std::vector<int32_t>& tokens, int64_t chunk_tokens) {
  auto kv = std::make_unique<DenseKvCache>(model.config().num_layers);
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t at = 0; at < n; at += chunk_tokens) {
    const int64_t end = std::min(n, at + chunk_tokens);
    model.Forward(std::vector<int32_t>(tokens.begin() + at, tokens.begin() + end), at, *kv);
  }
  return kv;
}

}  // namespace impress
