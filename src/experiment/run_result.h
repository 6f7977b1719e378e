// What `impress run` measures, as types: one RunResult per system, with one
// ToJson (the run JSON's schema, README "Run JSON"). The report and the
// figures read these fields; only files read JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/tier.h"
#include "common/status.h"
#include "experiment/run_config.h"

namespace impress {

struct TtftSummary {
  double mean = 0, p50 = 0, p99 = 0;
};

// One measured request.
struct RequestRow {
  int prefix = 0, doc = 0;
  double ttft_ms = 0, io_ms = 0, select_ms = 0;
  int64_t reused_tokens = 0;
  TierCounts bytes;  // served by each tier (the JSON names the home tier's and those below it)
  int64_t kv_chunks = 0;
  bool recomputed_after_error = false;
  int64_t healed_chunks = 0;
  int pred = 0;
  std::vector<double> loglik;  // per choice
  int64_t digest_bytes = 0;    // resident key digests scored (the digest system; host memory)
  // A generation question's (pred -1, no loglik): the greedy output and the share of its answers in it.
  std::optional<std::string> output;
  double answers_found = 0;
  int line = 0;  // a task file's line the question came from (1-based); 0 for the built-in tasks
};

// What opening the store computed or adopted from a backend below the disk.
struct FillCounts {
  int64_t computed_prefixes = 0, computed_tokens = 0, adopted_chunks = 0;
  int64_t remote_codec_mismatches = 0;  // chunks the remote tier held under another KV codec (refused)
};

// The remote tier's counters over one system's run (remote/remote_store.h).
struct RemoteTally {
  int64_t lookups = 0, chunks_found = 0, codec_mismatches = 0, parts_read = 0, parts_missing = 0, parts_corrupt = 0, read_errors = 0,
          bytes_read = 0, chunks_written = 0, write_errors = 0, bytes_written = 0;
  int64_t moved = 0, ask = 0, slot_reloads = 0, reconnects = 0, timeouts = 0;
  RemoteTally operator-(const RemoteTally& before) const;
  nlohmann::ordered_json ToJson() const;
};

// Reordering over one system's run (kvstore/reorderer.h, ReorderWorker).
struct ReorderSection {
  int every_requests = 0;
  int64_t passes = 0, nodes_reordered = 0, chunks_written = 0, bytes_freed = 0, log_bytes_dropped = 0,
          housekeeping_failures = 0;
  int64_t mapping_bytes = 0, score_bytes = 0, history_bytes = 0, chunk_bytes = 0;
};

// CUDA: the read-aheads' device intervals (kvstore/load_stream.h).
struct DeviceTimelineSection {
  struct Layer {
    double load_ms = 0, compute_ms = 0, wait_ms = 0;
  };
  double copy_hidden_share = 0;   // of the load stream's busy time, the share that overlaps compute (docs/gpu.md)
  std::vector<Layer> per_layer_mean;
};

// A request's mean selection time in parts (request/request.h, RequestTrace).
struct SelectParts {
  double importance_ms = 0, decision_ms = 0, gather_ms = 0;
};

// The selection's read-backs to the host per layer (RequestTrace::
// layer_host_syncs): on CUDA each is a host synchronisation; counted the same
// on the CPU. Over every (measured request, layer) pair of a reusing system,
// and apart on the layers where IMPRESS fell back to H2O.
struct HostSyncSection {
  double mean = 0, fallback_layers = 0, other_layers = 0;
  int64_t max = 0;
};

struct RunResult {
  std::string system;
  int requests = 0;
  TtftSummary ttft_ms;
  double io_ms_mean = 0, io_share = 0, select_ms_mean = 0;
  SelectParts select_parts;
  double placement_ms_mean = 0;  // the cache policy placing chunks on what selections used
  HostSyncSection host_syncs_per_layer;
  TierCounts bytes_read;
  TierShares hit_rate;     // of every chunk load, the share each cache tier served
  TierCounts chunks_read;  // chunks read from the home tier and each backend below it (LoadStats::read)
  double kv_chunks_per_request = 0;
  TierShares kv_hit_rate;  // of the chunks whose K/V were read (every load, where all are kept), each tier's share
  int64_t chunk_loads = 0, reused_tokens = 0, computed_tokens = 0, recomputed_after_error = 0, healed_chunks = 0;
  double acc = 0;
  std::string policy;
  double kept_share = 0, fallback_share = 0, important_share_of_chunks_read = 0;
  std::vector<double> layer_kept_share, layer_kv_load_ratio, layer_fallback_share;
  double speculated_chunks_per_request = 0, speculated_used_share = 0;
  std::vector<RequestRow> per_request;
  std::optional<DeviceTimelineSection> device_timeline;
  std::optional<FillCounts> fill;      // systems that reuse KV
  std::optional<RemoteTally> remote;   // with --remote
  std::optional<ReorderSection> reorder;  // systems that reorder
  bool repeated = false;  // an earlier sweep point's run, not measured again (RunMemo)

  nlohmann::ordered_json ToJson() const;
};

// Every system's result at one point, and the point.
struct RunResults {
  RunConfig config;
  std::string model;   // the model's folder (set by the caller; empty: unknown)
  std::string device;  // "cuda" or "cpu"
  int64_t kv_bytes_per_token = 0;
  std::vector<RunResult> runs;

  // The system's result. Errors: the run has no such system (naming it).
  StatusOr<const RunResult*> Find(const std::string& system) const;
  nlohmann::ordered_json ToJson() const;
};

}  // namespace impress
