// The request-stream experiment behind `impress run` and the TTFT figures:
// one prefix pool, one request stream, each system over it with cold caches
// of its own policy on the same disk store.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "experiment/run_config.h"
#include "experiment/run_result.h"

namespace impress {

class Model;
class Tokenizer;

// Runs every system of `config` over the same stream (RunResults::ToJson is
// the run JSON; README lists its fields). Errors: unknown task or system,
// missing split, unusable store.
StatusOr<RunResults> RunSystems(Model& model, const Tokenizer& tok, const RunConfig& config);

// The table `impress run` prints for one RunSystems result, then its
// remote, speculation, reordering and per-layer (Fig. 19) lines.
void PrintRunReport(const RunResults& result, std::FILE* out);

}  // namespace impress
