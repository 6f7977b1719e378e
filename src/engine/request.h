// One request through a system (engine/systems.h): match -> select and load
// -> compute -> (after the first token) store.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "engine/load_stream.h"
#include "engine/prefix_store.h"
#include "engine/systems.h"
#include "model/kv_provider.h"
#include "select/method.h"
#include "select/selector.h"

namespace impress {

class Model;

// Timing and I/O of one request. TTFT runs from the request's start (prefix
// lookup included) to the last context token's logits on the host.
struct RequestTrace {
  double ttft_ms = 0;
  double io_ms = 0;        // time the layer loop waited for prefix KV (fetching from the tiers)
  double select_ms = 0;    // selection systems: importance, top-k, similarity, gathers
  // select_ms in parts: computing importance (H2O's, the probe heads'),
  // assembling chunks into tensors (stacking, token order, gathering the
  // kept positions, casting), and deciding (top-k, the trust test, the
  // agreed set, importance history: the rest).
  double importance_ms = 0, gather_ms = 0, decision_ms = 0;
  // The cache policy learning what a selection used and placing chunks on
  // it (the score policy's Observe, with its copies between tiers paced at
  // the H2D cap): caching's work, in TTFT, in neither io_ms nor select_ms.
  double placement_ms = 0;
  // Time in the layer loop that is neither selection nor compute: I/O and placement.
  double apart_from_selection_ms() const { return io_ms + placement_ms; }
  double store_ms = 0;     // writing new chunks after the first token (not in TTFT)
  int64_t reused_tokens = 0;
  int64_t computed_tokens = 0;
  int64_t stored_chunks = 0;
  LoadStats load;          // summed over layers
  SelectionCounters selection;  // per layer: probes, fallbacks, kept of total tokens
  double important_share_sum = 0;  // over chunks read for selection (kv_chunks()): selected tokens / C
  TierCounts kv_chunk_tier;  // those chunks by the tier their K/V came from (GPU, CPU, disk)
  std::vector<int64_t> layer_kv_chunks;  // per layer: chunks whose K or V a selection read
  // RequestOptions::speculate: (chunk, layer) pairs whose K/V were read ahead
  // on a guess, and of those the ones the layer's selection then needed.
  int64_t speculated_chunks = 0;
  int64_t speculated_used = 0;
  int64_t prefix_chunks = 0;             // chunks of the matched prefix (per layer)
  int64_t digest_bytes = 0;              // resident key digests a selection scored from (host memory)
  // (chunk, layer) pairs whose K or V a selection read, over all layers.
  int64_t kv_chunks() const;
  // Per layer: the selection's read-backs to the host (SelectionObserver::
  // OnReadBack), each a host synchronisation on CUDA and counted on every
  // device (docs/gpu.md). Sized to the model's layers for systems that reuse.
  std::vector<int64_t> layer_host_syncs;
  // On CUDA, per layer: the read-ahead's and the compute's intervals on the
  // device and the compute stream's wait (engine/load_stream.h); empty on the CPU.
  std::vector<DeviceLayerTimes> device_layers;
  bool recomputed_after_error = false;  // a stored chunk failed its checksum or was missing
  std::string error;       // that failure
  int64_t healed_chunks = 0;  // chunks this request recomputed and wrote back (PrefixStore::Heal)
};

struct RequestOptions {
  // Read ahead while layer l computes: all of layer l+1 under full reuse; under
  // selection the part its queries do not decide (keys, or probe keys).
  bool prefetch = true;
  // Methods that read probe keys or nothing ahead (ITF, digest), with
  // prefetch: layer l+1's read ahead also takes the K and V of the chunks
  // holding the tokens that layer l gathered (ITF: the last trusted layer's
  // agreed set), a guess at layer l+1's set (beyond the paper). It changes which bytes are
  // read and when, never what attention sees: chunks the guess misses are
  // read after the layer's selection, chunks it wrongly names cost bytes
  // (and count as accesses to the cache policies, as every read does).
  bool speculate = false;
  // Also told what every layer's selection ranked by and chose (may be null;
  // on a failed read a layer reports an empty selection).
  SelectionObserver* observer = nullptr;
};

// Runs `context` (token ids) and returns the log-probabilities after its last
// token; `kv` ends holding what the context's tokens attend to, for scoring
// continuations. The first `storable` tokens (the shared prefix) may be
// reused, and their whole chunks are stored; the store holds one KV per
// prefix, ComputeStoredKv's (engine/stored_kv.h), whichever path writes it:
//  - nothing stored: the prefix's chunks are computed as the store computes
//    them and the rest over them; the chunks are stored after the first token;
//  - a stored prefix: served by the system from the store; whole chunks past
//    the match are computed as the store computes them and stored after the
//    first token (never from the selected computation);
//  - a stored chunk that fails its checksum or is missing is never served:
//    the matched prefix is recomputed as the store computes it, the failed
//    chunks are written back (PrefixStore::Heal, counted in healed_chunks),
//    and the request is served again from the store: its answer is the one a
//    clean store gives, bit for bit (recomputed_after_error; the trace's
//    counts are the second attempt's). If writing back fails, or the second
//    attempt fails too, the whole context is recomputed.
// An I/O error reading the store is returned.
StatusOr<at::Tensor> RunRequest(const System& system, Model& model, PrefixStore* store,
                                const std::vector<int32_t>& context, int64_t storable,
                                std::unique_ptr<RewindableKv>* kv, RequestTrace* trace,
                                const RequestOptions& opt = {});

}  // namespace impress
