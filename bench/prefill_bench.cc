// Prefill throughput (tokens/s) of one forward pass over a long prompt, the
// work that dominates time to first token when nothing is reused.
//
//   impress_bench --model DIR [--tokens 2048] [--threads N] [--device cpu|cuda]
//                 [--dtype float32|float16|bfloat16] [benchmark flags]
// The timed region ends when the last token's logits are in host memory.
// Reports tokens/s as the counter "tok/s". Compare against transformers with
// scripts/bench/bench_prefill.sh, which runs both at the same thread count.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>

#include "common/runtime.h"
#include "bench_provenance.h"
#include "model/model.h"

namespace {

struct BenchFlags {
  std::string model = "models/smollm2-135m";
  int tokens = 2048;
  int threads = 0;
  std::string device = "cpu";
  std::string dtype = "float32";
};

BenchFlags ParseFlags(int* argc, char** argv) {
  BenchFlags f;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
      if (std::strcmp(argv[i], name) == 0 && i + 1 < *argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--model")) f.model = v;
    else if (const char* v = value("--tokens")) f.tokens = std::atoi(v);
    else if (const char* v = value("--threads")) f.threads = std::atoi(v);
    else if (const char* v = value("--device")) f.device = v;
    else if (const char* v = value("--dtype")) f.dtype = v;
    else argv[out++] = argv[i];
  }
  *argc = out;
  return f;
}

void BM_Prefill(benchmark::State& state, impress::Model* model, int tokens) {
  std::vector<int32_t> ids(tokens);
  for (int i = 0; i < tokens; ++i) ids[i] = (i * 7919 + 13) % model->config().vocab_size;
  for (auto _ : state) {
    impress::NoPrefixKv none;
    at::Tensor logits = model->Forward(ids, 0, none).cpu();
    benchmark::DoNotOptimize(logits.data_ptr<float>());
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(tokens) * state.iterations(),
                                               benchmark::Counter::kIsRate);
  state.counters["threads"] = at::get_num_threads();
}

}  // namespace

int main(int argc, char** argv) {
  impress::RecordCommandLine(argc, argv);
  BenchFlags flags = ParseFlags(&argc, argv);
  impress::TuneHostAllocator();
  if (flags.threads > 0) at::set_num_threads(flags.threads);
  auto model = impress::LoadModel(flags.model, impress::LoadOptions{flags.device, flags.dtype});
  if (!model.ok()) {
    std::cerr << "impress_bench: error: " << model.status().message() << "\n";
    return 1;
  }
  impress::Status valid = impress::ValidateTokens((*model)->config(), std::vector<int32_t>(flags.tokens, 0), 0);
  if (!valid.ok()) {
    std::cerr << "impress_bench: error: --tokens: " << valid.message() << "\n";
    return 1;
  }
#ifndef NDEBUG
  std::cerr << "impress_bench: WARNING: assertions are on (debug build); timings are not representative\n";
#endif
  benchmark::RegisterBenchmark(("prefill/" + std::to_string(flags.tokens)).c_str(), BM_Prefill, model->get(),
                               flags.tokens)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2.0);
  impress::AddProvenanceContext(flags.model);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
