// How a benchmark run was made, in Google Benchmark's JSON "context"
// (--benchmark_out=FILE --benchmark_out_format=json): the fields of every
// impress JSON's "provenance" (cli/provenance.h), each as "impress_<field>".
#pragma once

#include <string>

#include <benchmark/benchmark.h>

#include "cli/provenance.h"

namespace impress {

// Call before benchmark::RunSpecifiedBenchmarks, after RecordCommandLine(argc,
// argv) has seen the whole command line (first in main).
inline void AddProvenanceContext(const std::string& model_dir) {
  const nlohmann::ordered_json provenance = Provenance(model_dir, false);
  for (const auto& [key, value] : provenance.items())
    benchmark::AddCustomContext("impress_" + key, value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace impress
