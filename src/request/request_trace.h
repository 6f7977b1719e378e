// What one request measured (RequestTrace) and how it runs (RequestOptions):
// what RunRequest (request/request.h) fills and reads, and what the store
// source a selection reads through (request/store_source.h) adds to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvstore/chunk_reader.h"
#include "kvstore/load_stream.h"
#include "select/method.h"
#include "select/selector.h"

namespace impress {

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
  int64_t kv_chunks() const {
    int64_t n = 0;
    for (int64_t c : layer_kv_chunks) n += c;
    return n;
  }
  // Per layer: the selection's read-backs to the host (SelectionObserver::
  // OnReadBack), each a host synchronisation on CUDA and counted on every
  // device (docs/gpu.md). Sized to the model's layers for systems that reuse.
  std::vector<int64_t> layer_host_syncs;
  // On CUDA, per layer: the read-ahead's and the compute's intervals on the
  // device and the compute stream's wait (kvstore/load_stream.h); empty on the CPU.
  std::vector<DeviceLayerTimes> device_layers;
  bool recomputed_after_error = false;  // a stored chunk failed its checksum or was missing
  std::string error;       // that failure
  int64_t healed_chunks = 0;  // chunks this request recomputed and wrote back (PrefixStore::Heal)
};

// Where a speculative guess (RequestOptions::speculate) may read from.
enum class Speculation : uint8_t {
  kOff,
  kAnywhere,  // every guessed chunk, from the caches or below them
  kCached,    // only guessed chunks a cache level holds: a guess reads nothing from disk or remote
  // As kCached where the caches hold at least half of the guess; else (a
  // prefix the caches let go, whose reads wait on the disk) every guessed chunk.
  kAdaptive,
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
  // kCached leaves out of the guess the chunks no cache level holds: they are
  // read after the selection when needed, so a guess costs no bytes below
  // the caches.
  Speculation speculate = Speculation::kOff;
  // With prefetch: how many layers ahead the reads above start. 1 (the
  // paper's pipeline): layer l's selection starts layer l+1's. r > 1: it
  // starts every not yet started read up to layer l+r, so reads from a slow
  // tier overlap r layers of compute; a guess is then the set of the layer
  // r back. It changes when bytes are read, never what attention sees.
  int read_ahead = 1;
  // Also told what every layer's selection ranked by and chose (may be null;
  // on a failed read a layer reports an empty selection).
  SelectionObserver* observer = nullptr;
};

}  // namespace impress
