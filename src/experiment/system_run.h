// One system's measured requests, summed as they run (Add) and summarized
// into its RunResult (Summarize): internal to `run` (experiment/run_systems.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvstore/prefix_store.h"
#include "kvstore/reorderer.h"
#include "request/request.h"
#include "experiment/run_result.h"

namespace impress {

// What one system's measured requests add up to.
struct SystemRun {
  std::string system;
  std::vector<double> ttft, io, select;
  double importance = 0, gather = 0, decision = 0;  // select's parts, summed
  double placement = 0;
  std::vector<RequestRow> per_request;  // measured requests, in order (tails)
  TierCounts bytes, hits, read_chunks;  // read_chunks: LoadStats::read
  int64_t chunk_loads = 0;
  int64_t reused = 0, computed = 0, recomputed_after_error = 0, healed_chunks = 0;
  int correct = 0, n = 0;
  std::string policy = "-";
  double important_sum = 0;
  int64_t selected_chunks = 0;           // (chunk, layer) pairs read for the tokens selection kept (Fig. 20)
  TierCounts kv_tier;                    // ... by the tier they came from (Fig. 21)
  std::vector<int64_t> layer_kv_chunks;  // per layer: chunks whose K/V a selection read
  int64_t prefix_chunks = 0;             // chunks available per layer, summed over requests
  int64_t speculated = 0, speculated_used = 0;  // RequestTrace's, summed
  // Host read-backs: summed over (request, layer) pairs on fallback layers
  // and elsewhere, those pairs' counts, and the most on one layer.
  int64_t syncs_fallback = 0, syncs_other = 0, layers_fallback = 0, layers_other = 0, syncs_max = 0;
  SelectionCounters selection;
  bool reorder = false;
  int64_t reorder_passes = 0;
  ReorderStats reordered;
  ReorderFootprint footprint;
  // CUDA: per layer, summed over requests, the read-ahead's device interval,
  // the layer's compute and the compute stream's wait (kvstore/load_stream.h).
  std::vector<double> device_load, device_compute, device_wait;
  double device_busy = 0, device_hidden = 0;  // the load stream's busy ms, and of it, overlapping compute
  int64_t device_requests = 0;
  std::optional<FillCounts> fill;      // what opening the store computed or adopted
  std::optional<RemoteTally> remote;   // the remote tier's counters over this system's run (with --remote)

  void Add(const RequestTrace& t, int layers);
  RunResult Summarize(int reorder_every) const;

 private:
  // Summarize's parts: Fig. 19's per-layer shares, the CUDA timeline, the reordering's section.
  void SummarizeLayers(RunResult* r) const;
  DeviceTimelineSection SummarizeDevice() const;
  ReorderSection SummarizeReorder(int reorder_every) const;
};

}  // namespace impress
