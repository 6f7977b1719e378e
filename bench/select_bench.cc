// Cost of choosing one layer's prefix KV, beside the attention it feeds.
// SmolLM2 shapes (9 query heads on 3 KV heads, head_dim 64), a 2048-token
// prefix, T new tokens, fp32 on the host; random q/k, so the probe heads
// disagree: ITF is measured trusted (alpha large: t near 0) and falling back
// (alpha 0: t = 1), and its parts one by one.
//
// Then a real store layer (BM_Store*): the model's own queries (--model, by
// default models/smollm2-135m; skipped when absent) over a stored 2048-token
// prefix of PIQA text, every chunk in the GPU tier (no I/O), one request of T
// new tokens per iteration; counters: microseconds per layer of selection and
// of its parts as `run` reports them (importance, decision, gather).
//
//   impress_select_bench [--model DIR] [--benchmark_filter=...]   (OMP_NUM_THREADS=1 for one core)
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "bench_provenance.h"
#include "codec/key_digest.h"
#include "common/runtime.h"
#include "kvstore/prefix_store.h"
#include "request/request.h"
#include "kvstore/stack_chunks.h"
#include "request/systems.h"
#include "model/attention.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/digest.h"
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

// Writes a buffer larger than the CPU's last-level cache, so that the next
// operation finds its inputs and output memory where they are inside `run`:
// between two layers' importance steps the forward pass streams that layer's
// weights (about 14 MB in fp32 on SmolLM2) through every cache.
void EvictCaches() {
  static std::vector<char> junk(64 << 20);
  for (size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<char>(junk[i] + 1);
  benchmark::ClobberMemory();
}

// Calls fn on the next of `sets` in every iteration; with `evict`, after
// evicting the caches outside the timed region.
template <class T, class Fn>
void Cycle(benchmark::State& state, const std::vector<T>& sets, Fn fn, bool evict = false) {
  size_t i = 0;
  for (auto _ : state) {
    if (evict) {
      state.PauseTiming();
      EvictCaches();
      state.ResumeTiming();
    }
    fn(sets[i++ % sets.size()]);
  }
}

// The layer's attention over the whole prefix (what `as` computes).
void BM_AttendFullPrefix(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)),
        [](const Inputs& in) { benchmark::DoNotOptimize(Attend(in.qkv, PrefixKv{in.pk, in.pv, {}})); });
}

// What that attention spends joining the prefix's keys and values to the new
// tokens' (model/attention.cc concatenates both before attending).
void BM_AttendJoinPrefixKv(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)), [](const Inputs& in) {
    benchmark::DoNotOptimize(at::cat({in.pk, in.qkv.k}, 1));
    benchmark::DoNotOptimize(at::cat({in.pv, in.qkv.v}, 1));
  });
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
// From memory, so each call also makes the prefix's digests (eval's path; a store holds them).
void BM_SelectDigestFromMemory(benchmark::State& state) { Select(state, SelectorKind::kDigest, 0.6); }

// The digest system's steps as a store-backed layer runs them: the resident
// digests decoded and stacked, chunks scored, ordered and kept.
// Args: prefix tokens; the digest codec (0: int4, 1: int8).
void BM_DigestDecode(benchmark::State& state) {
  const int64_t c = 64, p = state.range(0), n = p / c;
  const DigestCodec codec = static_cast<DigestCodec>(state.range(1));
  std::vector<at::Tensor> digests;
  for (int64_t i = 0; i < n; ++i) digests.push_back(EncodeDigest(codec, at::randn({c, kHkv, kD}).to(at::kHalf)));
  for (auto _ : state) {  // as StoreSource::DigestKeys: in fp32 into one buffer with room for 16 new keys
    at::Tensor all = at::empty({kHkv, p + 16, kD});
    for (int64_t i = 0; i < n; ++i) DecodeDigestRows(codec, digests[static_cast<size_t>(i)], all, i * c, c);
    benchmark::DoNotOptimize(all);
  }
}

// A layer's chunk scores over a prefix of range(1) tokens from range(0) new
// rows: range(2) 0 is kKeys from the last 16 rows, 1 is kRowMax from every row.
void BM_DigestChunkScores(benchmark::State& state) {
  const bool row_max = state.range(2) == 1;
  const int64_t p = state.range(1);
  const at::Tensor chunk_of = at::arange(p, at::kLong).div(64, "floor");
  at::manual_seed(1);
  std::vector<Inputs> sets(4);
  for (Inputs& in : sets) {
    in.qkv.q = at::randn({kHq, state.range(0), kD});
    in.qkv.k = at::randn({kHkv, state.range(0), kD});
    in.qkv.scale = 1.0f / 8.0f;
    in.pk = at::randn({kHkv, p + state.range(0), kD}).narrow(1, 0, p);  // with room, as a store's
  }
  Cycle(state, sets, [&](const Inputs& in) {
    benchmark::DoNotOptimize(DigestChunkScores(in.qkv.q, in.pk, in.qkv.k, in.qkv.scale, row_max ? 0 : 16, chunk_of,
                                               p / 64, row_max ? DigestScore::kRowMax : DigestScore::kKeys,
                                               state.range(0)));
  });
}

// kRowMax from every row over int8 digest codes (DigestChunkScoresInt8): range(0)
// new rows, range(1) prefix tokens; compare BM_DigestChunkScores/.../1, which
// scores the same digests decoded to fp32 (BM_DigestDecode's work not counted).
void BM_DigestChunkScoresInt8(benchmark::State& state) {
  const int64_t t = state.range(0), p = state.range(1);
  const at::Tensor chunk_of = at::arange(p, at::kLong).div(64, "floor");
  at::manual_seed(1);
  std::vector<std::pair<Inputs, Int8Keys>> sets(4);
  for (auto& [in, keys] : sets) {
    in.qkv.q = at::randn({kHq, t, kD});
    in.qkv.k = at::randn({kHkv, t, kD});
    in.qkv.scale = 1.0f / 8.0f;
    keys = Int8Keys{at::randint(-127, 128, {kHkv, p, kD}).to(at::kChar), at::rand({kHkv, p}) * 0.02};
  }
  size_t i = 0;
  for (auto _ : state) {
    const auto& [in, keys] = sets[i++ % sets.size()];
    benchmark::DoNotOptimize(DigestChunkScoresInt8(in.qkv.q, keys, in.qkv.k, in.qkv.scale, 0, chunk_of, p / 64));
  }
}

void BM_DigestOrderAndPositions(benchmark::State& state) {
  const at::Tensor chunk_of = at::arange(kPrefix, at::kLong).div(64, "floor");
  const at::Tensor scores = at::rand({kHkv, kPrefix / 64});
  for (auto _ : state)
    benchmark::DoNotOptimize(DigestKeptPositions(DigestChunkOrder(scores, DigestGroups::kRank), chunk_of,
                                                 kPrefix / 64, kPrefix / 4, 64, 0));
}

// H2O's importance: every head's attention weights over the prefix.
void BM_H2OImportance(benchmark::State& state) {
  Cycle(state, MakeInputs(state.range(0)), [](const Inputs& in) {
    benchmark::DoNotOptimize(PrefixImportance(in.qkv.q, in.pk, in.qkv.k, in.qkv.scale));
  });
}

// The floor under the probe heads' importance: its score matmul alone (the
// probe rows of one KV head's group against every prefix key), no softmax.
void ScoresMatmul(benchmark::State& state, bool evict) {
  Cycle(
      state, MakeInputs(state.range(0)),
      [](const Inputs& in) {
        const int64_t t = in.qkv.q.size(1);
        const at::Tensor q = in.qkv.q.slice(0, 0, kHq / kHkv).reshape({1, kHq / kHkv * t, kD});
        benchmark::DoNotOptimize(at::bmm(q, in.pk.slice(0, 0, 1).transpose(1, 2)));
      },
      evict);
  const double flops = 2.0 * (kHq / kHkv) * static_cast<double>(state.range(0)) * kPrefix * kD;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_ItfProbeScoresMatmul(benchmark::State& state) { ScoresMatmul(state, false); }
// The same with the caches evicted before each product.
void BM_ItfProbeScoresMatmulCold(benchmark::State& state) { ScoresMatmul(state, true); }

// What the same LibTorch matmul reaches on a large square fp32 product
// (1024 x 1024 x 1024): the rate the score matmul above can be held to.
void BM_SgemmReference(benchmark::State& state) {
  at::manual_seed(3);
  const at::Tensor a = at::randn({1024, 1024}), b = at::randn({1024, 1024});
  for (auto _ : state) benchmark::DoNotOptimize(at::mm(a, b));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 1024 * 1024 * 1024 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The probe importance's softmax alone, in place over the score rows of
// BM_ItfProbeScoresMatmul (the rest of the step is the matmul and a column sum).
void BM_ItfProbeSoftmax(benchmark::State& state) {
  std::vector<at::Tensor> scores;
  for (const Inputs& in : MakeInputs(state.range(0))) {
    const int64_t t = in.qkv.q.size(1);
    const at::Tensor q = in.qkv.q.slice(0, 0, kHq / kHkv).reshape({1, kHq / kHkv * t, kD});
    scores.push_back(at::bmm(q, in.pk.slice(0, 0, 1).transpose(1, 2)));
  }
  Cycle(state, scores, [](at::Tensor s) { at::_softmax_out(s, s, -1, false); });  // a handle on the same scores
}

// An alternative measured and not taken: the same product, softmax and
// column sum per block of `range(1)` rows, so that each block's scores stay
// in cache between the three passes (no causal mask: timing only).
void BM_ItfProbeImportanceRowBlocks(benchmark::State& state) {
  const int64_t rows_per_block = state.range(1);
  std::vector<std::pair<at::Tensor, at::Tensor>> sets;  // probe rows [g*T, d], keys [d, P + T]
  for (const Inputs& in : MakeInputs(state.range(0))) {
    const int64_t t = in.qkv.q.size(1);
    sets.emplace_back(in.qkv.q.slice(0, 0, kHq / kHkv).reshape({kHq / kHkv * t, kD}) * in.qkv.scale,
                      at::cat({in.pk[0], in.qkv.k[0]}, 0).t());
  }
  at::Tensor block = at::empty({rows_per_block, sets[0].second.size(1)});
  Cycle(state, sets, [&](const std::pair<at::Tensor, at::Tensor>& s) {
    at::Tensor sums = at::zeros({s.second.size(1)});
    for (int64_t r = 0; r < s.first.size(0); r += rows_per_block) {
      const int64_t n = std::min(rows_per_block, s.first.size(0) - r);
      at::Tensor b = block.narrow(0, 0, n);
      at::mm_out(b, s.first.narrow(0, r, n), s.second);
      at::_softmax_out(b, b, -1, false);
      sums.add_(b.sum(0));
    }
    benchmark::DoNotOptimize(sums);
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

// The same with the probe keys followed by room for the new tokens' keys, as
// a store source hands them out (PrefixSource::key_room): no copy of the prefix keys.
void ProbeImportanceWithRoom(benchmark::State& state, bool evict) {
  std::vector<Inputs> sets = MakeInputs(state.range(0));
  const int64_t t = state.range(0);
  for (Inputs& in : sets) {
    at::Tensor roomy = at::empty({kHkv, kPrefix + t, kD}).narrow(1, 0, kPrefix);
    roomy.copy_(in.pk);
    in.pk = roomy;
  }
  Cycle(
      state, sets, [t](const Inputs& in) { benchmark::DoNotOptimize(ProbeImportance({}, in.qkv, in.pk, t)); }, evict);
}
void BM_ItfProbeImportanceWithRoom(benchmark::State& state) { ProbeImportanceWithRoom(state, false); }
// The same with the caches evicted before each step: its cost inside `run`.
void BM_ItfProbeImportanceWithRoomCold(benchmark::State& state) { ProbeImportanceWithRoom(state, true); }

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

// Gathering: a 2048-token prefix in 32 cached chunks ([64, 3, 64] fp16)
// into what the methods read, in fp32: the probe keys of KV head 0 (every
// token), and the keys of k = 512 positions spread over the prefix.
std::vector<at::Tensor> CachedChunks() {
  at::manual_seed(2);
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < kPrefix / 64; ++i) parts.push_back(at::randn({64, kHkv, kD}).to(at::kHalf));
  return parts;
}

void BM_StackProbeKeys(benchmark::State& state) {
  std::vector<at::Tensor> probe;
  for (const at::Tensor& p : CachedChunks()) probe.push_back(p.narrow(1, 0, 1));
  for (auto _ : state) benchmark::DoNotOptimize(StackChunkRows(probe, {}, at::kFloat));
}

void BM_GatherKeptKeys(benchmark::State& state) {
  const std::vector<at::Tensor> parts = CachedChunks();
  const at::Tensor rows = std::get<0>(at::randperm(kPrefix, at::kLong).narrow(0, 0, kPrefix / 4).sort());
  for (auto _ : state) benchmark::DoNotOptimize(StackChunkRows(parts, rows, at::kFloat));
}

#define NEW_TOKENS Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_AttendFullPrefix)->NEW_TOKENS;
BENCHMARK(BM_AttendJoinPrefixKv)->NEW_TOKENS;
BENCHMARK(BM_SelectH2O)->NEW_TOKENS;
BENCHMARK(BM_SelectItfTrusted)->NEW_TOKENS;
BENCHMARK(BM_SelectItfFallback)->NEW_TOKENS;
BENCHMARK(BM_SelectDigestFromMemory)->NEW_TOKENS;
BENCHMARK(BM_DigestDecode)->Args({kPrefix, 0})->Args({4 * kPrefix, 0})->Args({4 * kPrefix, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DigestChunkScores)->ArgsProduct({{16, 64}, {kPrefix, 4 * kPrefix}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DigestChunkScoresInt8)->ArgsProduct({{16, 64}, {kPrefix, 4 * kPrefix}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DigestOrderAndPositions)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_H2OImportance)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeImportance)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeImportanceWithRoom)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeImportanceWithRoomCold)->NEW_TOKENS->Iterations(200);  // each evicts 64 MB untimed
BENCHMARK(BM_ItfProbeScoresMatmul)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeScoresMatmulCold)->NEW_TOKENS->Iterations(200);
BENCHMARK(BM_SgemmReference)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ItfProbeSoftmax)->NEW_TOKENS;
BENCHMARK(BM_ItfProbeImportanceRowBlocks)->ArgsProduct({{16, 64}, {16, 64}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ItfTopKSets)->NEW_TOKENS;
BENCHMARK(BM_ItfJaccard)->NEW_TOKENS;
BENCHMARK(BM_ItfAgreedSet)->NEW_TOKENS;
BENCHMARK(BM_StackProbeKeys)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GatherKeptKeys)->Unit(benchmark::kMicrosecond);

// A prefix stored from the model's own KV, held in a GPU tier large enough
// for all of it, and the context tokens that follow it.
struct StoreFixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<PrefixStore> store;
  std::vector<int32_t> tokens;  // kPrefix + 64
};

StatusOr<std::unique_ptr<StoreFixture>> MakeStoreFixture(const std::string& model_dir, const std::string& dir) {
  auto f = std::make_unique<StoreFixture>();
  ASSIGN_OR_RETURN(f->model, LoadModel(model_dir, LoadOptions{"cpu", "auto"}));
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::FromFile(model_dir + "/tokenizer.json"));
  std::ifstream in("data/piqa/train.jsonl");
  if (!in) return Status::NotFound("data/piqa/train.jsonl: cannot open it (run from the repository root)");
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(f->tokens, tok->Encode(text.str().substr(0, 32 << 10)));
  if (f->tokens.size() < kPrefix + 64) return Status::InvalidArgument("data/piqa/train.jsonl: too little text");
  f->tokens.resize(kPrefix + 64);
  std::filesystem::remove_all(dir);
  PrefixStoreOptions o;
  o.dir = dir;
  o.tiers = TiersOver(CacheLevels(TierCountsOf({{Tier::kGpu, int64_t{1} << 30}})));
  ASSIGN_OR_RETURN(f->store, PrefixStore::Open(*f->model, o));
  // The first request stores the prefix (and the GPU tier keeps it).
  ASSIGN_OR_RETURN(System as, ParseSystem(system_name::kAs));
  RequestTrace trace;
  std::unique_ptr<RewindableKv> kv;
  RETURN_IF_ERROR(RunRequest(as, *f->model, f->store.get(), f->tokens, kPrefix, &kv, &trace).status());
  return f;
}

// One request of state.range(0) new tokens through `system` per iteration.
void BM_StoreSelect(benchmark::State& state, StoreFixture* f, const System& system) {
  const std::vector<int32_t> ctx(f->tokens.begin(), f->tokens.begin() + kPrefix + state.range(0));
  double select = 0, importance = 0, decision = 0, gather = 0, fallback = 0;
  for (auto _ : state) {
    RequestTrace t;
    std::unique_ptr<RewindableKv> kv;
    auto r = RunRequest(system, *f->model, f->store.get(), ctx, kPrefix, &kv, &t);
    if (!r.ok() || t.reused_tokens != kPrefix) {
      state.SkipWithError(r.ok() ? "the prefix was not reused" : r.status().message().c_str());
      break;
    }
    select += t.select_ms, importance += t.importance_ms, decision += t.decision_ms, gather += t.gather_ms;
    fallback += t.selection.FallbackShare();
  }
  const double per_layer_us = 1000.0 / f->model->config().num_layers;
  auto avg = [](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgIterations); };
  state.counters["select_us"] = avg(select * per_layer_us);
  state.counters["importance_us"] = avg(importance * per_layer_us);
  state.counters["decision_us"] = avg(decision * per_layer_us);
  state.counters["gather_us"] = avg(gather * per_layer_us);
  state.counters["fallback"] = avg(fallback);
}

// Registers BM_Store* over the model in `model_dir`, when there is one.
std::unique_ptr<StoreFixture> RegisterStoreBenchmarks(const std::string& model_dir) {
  if (!std::filesystem::exists(model_dir + "/config.json")) {
    std::cerr << "select_bench: no model in " << model_dir << ": the BM_Store benchmarks are skipped\n";
    return nullptr;
  }
  auto f = MakeStoreFixture(model_dir, "build/bench_select_store");
  if (!f.ok()) {
    std::cerr << "select_bench: " << f.status().message() << "\n";
    std::exit(1);
  }
  StoreFixture* fx = f->get();
  const std::vector<std::pair<std::string, ItfUnit>> systems = {
      {system_name::kAs, ItfUnit::kToken}, {system_name::kH2oLfu, ItfUnit::kToken}, {system_name::kImpressItf, ItfUnit::kToken},
      {system_name::kImpressItf, ItfUnit::kChunk}};
  for (const auto& [name, unit] : systems) {
    System s = *ParseSystem(name, kRetention);
    s.select.unit = unit;
    const std::string label = "BM_Store/" + name + (name == system_name::kImpressItf ? "/" + ItfUnitNames()[static_cast<int>(unit)] : "");
    benchmark::RegisterBenchmark(label.c_str(), [fx, s](benchmark::State& st) { BM_StoreSelect(st, fx, s); })
        ->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(12);
  }
  return std::move(*f);
}

}  // namespace

int main(int argc, char** argv) {
  impress::RecordCommandLine(argc, argv);
  impress::TuneHostAllocator();  // as the impress executable does
  std::string model_dir = "models/smollm2-135m";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--model" && i + 1 < argc) model_dir = argv[++i];
    else rest.push_back(argv[i]);
  }
  int n = static_cast<int>(rest.size());
  impress::AddProvenanceContext(model_dir);
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  auto fixture = RegisterStoreBenchmarks(model_dir);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
