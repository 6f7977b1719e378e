// One request through the system: match -> load -> compute -> (after the first
// token) store. Systems are compositions (DESIGN.md); this file has the two
// that need no importance selection: recomputation and full reuse.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "engine/prefix_store.h"
#include "model/kv_provider.h"

namespace impress {

class Model;

enum class System { kRecomp, kAs };
StatusOr<System> ParseSystem(const std::string& name);
const char* SystemName(System s);

// Timing and I/O of one request. TTFT runs from the request's start (prefix
// lookup included) to the last context token's logits on the host.
struct RequestTrace {
  double ttft_ms = 0;
  double io_ms = 0;        // time the layer loop waited for prefix KV
  double store_ms = 0;     // writing new chunks after the first token (not in TTFT)
  int64_t reused_tokens = 0;
  int64_t computed_tokens = 0;
  int64_t stored_chunks = 0;
  LoadStats load;          // summed over layers
  bool recomputed_after_error = false;  // a stored chunk failed its checksum
  std::string error;       // that failure
};

struct RequestOptions {
  bool prefetch = true;  // load layer l+1 while layer l computes
};

// Runs `context` (token ids) and returns the log-probabilities after its last
// token; `kv` ends holding the KV of every context token. The first
// `storable` tokens (the shared prefix) may be reused and are stored.
StatusOr<at::Tensor> RunRequest(System system, Model& model, PrefixStore* store, const std::vector<int32_t>& context,
                                int64_t storable, DenseKvCache& kv, RequestTrace* trace,
                                const RequestOptions& opt = {});

}  // namespace impress
