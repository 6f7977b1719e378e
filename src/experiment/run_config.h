// What `impress run` is asked to run: the workload, the systems and the
// machine they share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/tier.h"
#include "data/retrieval.h"
#include "request/request_trace.h"
#include "request/systems.h"

namespace impress {

inline SelectorOptions RunSelectionDefaults() {
  SelectorOptions s;
  s.retention = 0.25;
  return s;
}

// The speculation modes `run` offers, one row each: its flag (none for
// kOff) and help, what the run's JSON adds as "speculate_from" (null:
// nothing, as the JSON of runs made before the modes), and what the report's
// configuration line says.
struct SpeculationMode {
  Speculation mode;
  const char* flag;
  const char* help;
  const char* json_from;
  const char* report;
};
const std::vector<SpeculationMode>& SpeculationModes();
const SpeculationMode& SpeculationModeOf(Speculation s);

struct RunConfig {
  std::string task = "piqa";
  std::string task_file;                           // instead of a built-in task: a task file (data/task_file.h);
                                                   // its contexts are the pool, `task` its file name
  std::string data = "data";                       // <data>/<task>/<split>.jsonl
  std::vector<std::string> systems = {system_name::kRecomp, system_name::kAs};
  std::string store;                               // chunk store folder; required when a system reuses KV
  int pool = 8;                                    // distinct prefixes
  int prefix_tokens = 2048;                        // target length of each (capped by the model's window)
  RetrievalOptions retrieval;                      // task "retrieval": needle density and choices (data/retrieval.h)
  int requests = 50;                               // measured requests
  int warmup = 10;                                 // requests run before measuring
  int chunk = 64;                                  // tokens per chunk
  TierCounts cache_bytes = TierCountsOf({{Tier::kGpu, 64 << 20}, {Tier::kCpu, 128 << 20}});  // per cache tier
  double disk_bw = 0, h2d_bw = 0;                  // bytes/s caps (0: none)
  std::string policy;                              // every system's cache policy (empty: each system's own)
  std::string kv_dtype = "float16";
  std::string kv_codec = "fp16";                   // how the disk stores chunk parts: fp16 (as is), int8, int4
  double mean = 0.5, spread = 0.2;                 // prefix popularity (fractions of the pool)
  // Every system's selection knobs (retention, alpha, ITF unit, probe layout,
  // importance shape, digest options); each system sets its own kind, and
  // `seed` is the random control's. Retention 0.25 unless set.
  SelectorOptions select = RunSelectionDefaults();
  uint64_t seed = 1234;
  bool prefetch = true;
  Speculation speculate = Speculation::kOff;       // impress and digest systems: RequestOptions::speculate
  int read_ahead = 1;                              // with prefetch: RequestOptions::read_ahead
  int reorder_every = 0;                           // RO systems: background pass every N requests (0: never)
  std::string remote;                              // redis://HOST:PORT[,...]: the shared tier below the disk (empty: none)
  double remote_bw = 0;                            // bytes/s cap on remote reads (0: none)

  // Every field: the result's "config" and what identifies a run (the
  // figures' memo key), so that a new field cannot be left out of either.
  nlohmann::ordered_json ToJson() const;
};

// Appends "<tier>_cache": bytes for each cache tier ("gpu_cache", "cpu_cache"):
// the run and figure records' keys.
void AddCacheBytes(const TierCounts& bytes, nlohmann::ordered_json* j);

}  // namespace impress
