// Cost of choosing one layer's prefix KV, beside the attention it feeds.
// SmolLM2 shapes (9 query heads on 3 KV heads, head_dim 64), a 2048-token
// prefix, T new tokens, fp32 on the host; random q/k, so the probe heads
// disagree: ITF is measured trusted (alpha large: t near 0) and falling back
// (alpha 0: t = 1), and its parts one by one.
//
//   impress_select_bench [--benchmark_filter=...]   (OMP_NUM_THREADS=1 for one core)
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include <vector>

#include "common/runtime.h"
#include "model/attention.h"
#include "select/importance.h"
#include "select/selector.h"

namespace {

using namespace impress;

constexpr int64_t kHq = 9, kHkv = 3, kD = 64, kPrefix = 2048;
constexpr double kRetention = 0.25;

struct Inputs {
  LayerQkv qkv;
  at::Tensor pk, pv;
};

// Each benchmark cycles through several random layers: on one input repeated,
// the branch predictor learns top-k's comparisons and small steps look up
// to 4x cheaper than on fresh data.
constexpr int kSets = 8;

std::vector<Inputs> MakeInputs(int64_t t) {
  at::manual_seed(1);
  std::vector<Inputs> sets(kSets);
  for (Inputs& in : sets) {
    in.qkv.q = at::randn({kHq, t, kD});
    in.qkv.k = at::randn({kHkv, t, kD});
    in.qkv.v = at::randn({kHkv, t, kD});
    in.qkv.scale = 1.0f / 8.0f;
    in.pk = at::randn({kHkv, kPrefix, kD});
    in.pv = at::randn({kHkv, kPrefix, kD});
  }
  return sets;
}

// Calls fn on the next of `sets` in every iteration.
template <class T, class Fn>
void Cycle(benchmark::State& state, const std::vector<T>& sets, Fn fn) {
  size_t i = 0;
  for (auto _ : state) fn(sets[i++ % sets.size()]);
}

// The layer's attention over the whole prefix (what `as` computes).
void BM_AttendFullPrefix(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)),
        [](const Inputs& in) { benchmark::DoNotOptimize(Attend(in.qkv, PrefixKv{in.pk, in.pv, {}})); });
}

void Select(benchmark::State& state, SelectorKind kind, double alpha) {
  SelectorOptions opt;
  opt.kind = kind;
  opt.retention = kRetention;
  opt.alpha = alpha;
  int64_t fallbacks = 0;
  Cycle(state, MakeInputs(state.range(0)), [&](const Inputs& in) {
    SelectedPrefix s = SelectFromPrefix(opt, in.qkv, in.pk, in.pv);
    fallbacks += s.fallback;
    benchmark::DoNotOptimize(s.kv.k);
  });
  state.counters["fallback"] = static_cast<double>(fallbacks) / static_cast<double>(state.iterations());
}

void BM_SelectH2O(benchmark::State& state) { Select(state, SelectorKind::kH2O, 0.6); }
void BM_SelectItfTrusted(benchmark::State& state) { Select(state, SelectorKind::kItf, 50.0); }
void BM_SelectItfFallback(benchmark::State& state) { Select(state, SelectorKind::kItf, 0.0); }

// H2O's importance: every head's attention weights over the prefix.
void BM_H2OImportance(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)), [](const Inputs& in) {
    benchmark::DoNotOptimize(PrefixImportance(in.qkv.q, in.pk, in.qkv.k, in.qkv.scale));
  });
}

// ITF's parts: the probe heads' importance, their top-k sets, the similarity
// test and the agreed set.
struct ProbeSets {
  at::Tensor importance, sets;
};

std::vector<ProbeSets> MakeProbeSets(int64_t t) {
  std::vector<ProbeSets> out;
  for (const Inputs& in : MakeInputs(t)) {
    at::Tensor imp = ProbeImportance({}, in.qkv, in.pk);
    out.push_back({imp, TopKSets(imp, RetainedTokens(kRetention, kPrefix))});
  }
  return out;
}

void BM_ItfProbeImportance(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)),
        [](const Inputs& in) { benchmark::DoNotOptimize(ProbeImportance({}, in.qkv, in.pk)); });
}

void BM_ItfTopKSets(benchmark::State& state) {
  const int64_t k = RetainedTokens(kRetention, kPrefix);
  Cycle(state, MakeProbeSets(state.range(0)),
        [k](const ProbeSets& p) { benchmark::DoNotOptimize(TopKSets(p.importance, k)); });
}

void BM_ItfJaccard(benchmark::State& state) {
  Cycle(state, MakeProbeSets(state.range(0)),
        [](const ProbeSets& p) { benchmark::DoNotOptimize(MeanPairwiseJaccard(p.sets)); });
}

void BM_ItfAgreedSet(benchmark::State& state) {
  const int64_t k = RetainedTokens(kRetention, kPrefix);
  Cycle(state, MakeProbeSets(state.range(0)),
        [k](const ProbeSets& p) { benchmark::DoNotOptimize(AgreedSet(p.sets, p.importance, k)); });
}

#define NEW_TOKENS Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_AttendFullPrefix)->NEW_TOKENS;
BENCHMARK(BM_SelectH2O)->NEW_TOKENS;
BENCHMARK(BM_SelectItfTrusted)->NEW_TOKENS;
BENCHMARK(BM_SelectItfFallback)->NEW_TOKENS;
BENCHMARK(BM_H2OImportance)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeImportance)->NEW_TOKENS;
BENCHMARK(BM_ItfTopKSets)->NEW_TOKENS;
BENCHMARK(BM_ItfJaccard)->NEW_TOKENS;
BENCHMARK(BM_ItfAgreedSet)->NEW_TOKENS;

}  // namespace

int main(int argc, char** argv) {
  impress::TuneHostAllocator();  // as the impress executable does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
