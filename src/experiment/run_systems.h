// The request-stream experiment behind `impress run` and the TTFT figures:
// one prefix pool, one request stream, each system over it with cold caches
// of its own policy on the same disk store.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "experiment/run_config.h"
#include "experiment/run_result.h"

namespace impress {

class Model;
class Tokenizer;

// Results of a sweep's earlier points, one per system and the part of the
// configuration that system depends on: the retention only for selective
// systems, alpha and the agreed-set unit only for systems with probe heads.
using RunMemo = std::map<std::string, RunResult>;

// Runs every system of `config` over the same stream (RunResults::ToJson is
// the run JSON; README lists its fields). With `memo`, a system whose run an
// earlier point already measured under everything it depends on (`as` in an
// --alpha sweep) is not run again: its row is that run's, marked `repeated`,
// and every run made here is added to `memo`. Without a remote tier only: with
// one, the systems of a point share the cluster's contents, so each runs.
// Errors: unknown task or system, missing split, unusable store.
StatusOr<RunResults> RunSystems(Model& model, const Tokenizer& tok, const RunConfig& config, RunMemo* memo = nullptr);

// The table `impress run` prints for one RunSystems result, then its
// remote, speculation, reordering and per-layer (Fig. 19) lines.
void PrintRunReport(const RunResults& result, std::FILE* out);
// The headline alone: per system its mean and p99 TTFT, its mean's speedup
// over h2o-lfu (the first system when h2o-lfu did not run), its disk bytes
// and its accuracy over the measured requests.
void PrintRunHeadline(const RunResults& result, std::FILE* out);

}  // namespace impress
