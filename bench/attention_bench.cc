// Attention of SmolLM2's shape (9 query heads over 3 KV heads, head_dim 64)
// on the host: the project's Attend (model/attention.h, which takes the fused
// CPU kernel of model/attention_cpu.h where it applies) against
// AttendLibTorch, the path from LibTorch's kernels it took before.
// Reports GFLOP/s (4 * Hq * T * (P + T) * d a call, the causal half
// included). Shapes: a request's 80 new tokens over a quarter of an 8K and of
// a 2K prefix (one set a layer), over an H2O union with its per-head mask,
// and a 2K-token prefill with no prefix.
//
//   impress_attention_bench [--benchmark_out=FILE --benchmark_out_format=json]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include "bench_provenance.h"
#include "model/attention.h"

namespace {

constexpr int64_t kHq = 9, kHkv = 3, kDim = 64;

struct Inputs {
  impress::LayerQkv x;
  impress::PrefixKv prefix;
};

Inputs Make(int64_t t, int64_t p, bool keep) {
  at::manual_seed(1);
  Inputs in;
  in.x.q = at::randn({kHq, t, kDim});
  in.x.k = at::randn({kHkv, t, kDim});
  in.x.v = at::randn({kHkv, t, kDim});
  in.x.scale = 0.125f;
  if (p > 0) {
    in.prefix.k = at::randn({kHkv, p, kDim});
    in.prefix.v = at::randn({kHkv, p, kDim});
    if (keep) in.prefix.keep = at::rand({kHq, p}) < 0.5;
  }
  return in;
}

void Count(benchmark::State& state, int64_t t, int64_t p) {
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHq * t * (p + t) * kDim * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.counters["threads"] = at::get_num_threads();
}

void BM_Attend(benchmark::State& state, int64_t t, int64_t p, bool keep) {
  const Inputs in = Make(t, p, keep);
  for (auto _ : state) benchmark::DoNotOptimize(impress::Attend(in.x, in.prefix).data_ptr<float>());
  Count(state, t, p);
}

// The path Attend took before the fused CPU kernel, and still takes off the
// CPU: LibTorch's fused attention (causal, or with a mask where there is a
// prefix), matmuls and a masked softmax where a keep mask hides tokens per head.
void BM_LibTorch(benchmark::State& state, int64_t t, int64_t p, bool keep) {
  const Inputs in = Make(t, p, keep);
  for (auto _ : state) benchmark::DoNotOptimize(impress::AttendLibTorch(in.x, in.prefix).data_ptr<float>());
  Count(state, t, p);
}

#define IMPRESS_SHAPES(F)                                    \
  BENCHMARK_CAPTURE(F, request_8k_quarter, 80, 2048, false); \
  BENCHMARK_CAPTURE(F, request_2k_quarter, 80, 512, false);  \
  BENCHMARK_CAPTURE(F, request_h2o_union, 80, 4096, true);   \
  BENCHMARK_CAPTURE(F, prefill_2k, 2048, 0, false)

IMPRESS_SHAPES(BM_Attend);
IMPRESS_SHAPES(BM_LibTorch);

}  // namespace

int main(int argc, char** argv) { return impress::RunBenchmarksMain(argc, argv); }
