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

// The whole main of a benchmark with no flags of its own and no model: the
// command line recorded, the provenance context, Google Benchmark's flags
// (an unknown one an error, exit 1) and every registered benchmark run.
inline int RunBenchmarksMain(int argc, char** argv) {
  RecordCommandLine(argc, argv);
  AddProvenanceContext("");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace impress
