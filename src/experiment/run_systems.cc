#include "experiment/run_systems.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "common/progress.h"
#include "common/units.h"
#include "data/retrieval.h"
#include "common/named.h"
#include "data/task.h"
#include "data/task_file.h"
#include "data/workload.h"
#include "kvstore/prefix_store.h"
#include "kvstore/remote_backend.h"
#include "kvstore/reorder_worker.h"
#include "request/request.h"
#include "request/stored_kv.h"
#include "kvstore/store_identity.h"
#include "experiment/system_run.h"
#include "eval/scorer.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "remote/remote_store.h"

namespace impress {
namespace {

// Opens the store for `system`, first writing every pool prefix it lacks
// (after adopting what a remote tier has of it); a store that had to be
// filled is reopened so that every system starts from the same state:
// everything stored, caches cold. `fill` says what that took.
StatusOr<std::unique_ptr<PrefixStore>> OpenFilledStore(Model& m, const PrefixStoreOptions& so,
                                                      const std::vector<std::vector<int32_t>>& pool_ids,
                                                      FillCounts* fill) {
  ASSIGN_OR_RETURN(std::unique_ptr<PrefixStore> store, PrefixStore::Open(m, so));
  int64_t adopted = 0, computed_prefixes = 0, computed_tokens = 0;
  Progress progress(std::string("fill store"), static_cast<int64_t>(pool_ids.size()));
  for (size_t p = 0; p < pool_ids.size(); ++p) {
    ASSIGN_OR_RETURN(const int64_t found, store->Discover(pool_ids[p]));
    adopted += found;
    if (store->NewChunks(pool_ids[p]) > 0) {
      const std::unique_ptr<DenseKvCache> kv = ComputeStoredKv(m, pool_ids[p], so.chunk_tokens);
      RETURN_IF_ERROR(store->Insert(pool_ids[p], *kv).status());
      computed_prefixes++;
      computed_tokens += static_cast<int64_t>(pool_ids[p].size());
    }
    progress.Update(static_cast<int64_t>(p) + 1);
  }
  *fill = {computed_prefixes, computed_tokens, adopted};
  if (computed_prefixes == 0 && adopted == 0) return store;
  store.reset();
  return PrefixStore::Open(m, so);
}

RemoteTally TallyOf(const RemoteCounters& c) {
  RemoteTally t;
  t.lookups = c.lookups, t.chunks_found = c.chunks_found, t.codec_mismatches = c.codec_mismatches;
  t.parts_read = c.parts_read;
  t.parts_missing = c.parts_missing, t.parts_corrupt = c.parts_corrupt, t.read_errors = c.read_errors;
  t.bytes_read = c.bytes_read, t.chunks_written = c.chunks_written, t.write_errors = c.write_errors;
  t.bytes_written = c.bytes_written, t.moved = c.cluster.moved, t.ask = c.cluster.ask;
  t.slot_reloads = c.cluster.slot_reloads, t.reconnects = c.cluster.reconnects, t.timeouts = c.cluster.timeouts;
  return t;
}

}  // namespace

void AddCacheBytes(const TierCounts& bytes, nlohmann::ordered_json* j) {
  for (Tier t : kTiers)
    if (IsCacheTier(t)) (*j)[std::string(TierName(t)) + "_cache"] = bytes[t];
}

const std::vector<SpeculationMode>& SpeculationModes() {
  static const std::vector<SpeculationMode> modes = {
      {Speculation::kOff, nullptr, nullptr, nullptr, ""},
      {Speculation::kAnywhere, "--speculate",
       "impress and digest systems: read ahead the K/V chunks that the last layer's chosen tokens (impress: the "
       "last trusted layer's agreed tokens) occupy, a guess at the next layer's (beyond the paper; a kind of "
       "read-ahead)",
       nullptr, "; speculative K/V"},
      {Speculation::kCached, "--speculate-cached",
       "as --speculate, but the guess takes only chunks a cache tier holds: no bytes from disk or remote on a guess",
       "cache", "; speculative K/V from the caches"},
      {Speculation::kAdaptive, "--speculate-adaptive",
       "as --speculate-cached where the caches hold at least half of a layer's guess, else the whole guess (a "
       "prefix the caches let go: its reads wait on the disk)",
       "cache, or anywhere when cold", "; speculative K/V from the caches (all where they hold under half)"},
  };
  return modes;
}

const SpeculationMode& SpeculationModeOf(Speculation s) {
  for (const SpeculationMode& m : SpeculationModes())
    if (m.mode == s) return m;
  IMPRESS_CHECK(false);
  return SpeculationModes().front();
}

nlohmann::ordered_json RunConfig::ToJson() const {
  nlohmann::ordered_json j = {{"task", task}, {"pool", pool}, {"prefix_tokens", prefix_tokens}, {"requests", requests},
          {"warmup", warmup}, {"chunk", chunk}, {"kv_dtype", kv_dtype}};
  AddCacheBytes(cache_bytes, &j);
  j.update(nlohmann::ordered_json{{"retention", select.retention}, {"alpha", select.alpha},
          {"itf_unit", NameOf(ItfUnitNames(), select.unit)}, {"probe_layout", NameOf(ProbeLayoutNames(), select.probe_layout)}, {"disk_bw", disk_bw}, {"h2d_bw", h2d_bw}, {"seed", seed}, {"mean", mean},
          {"spread", spread}, {"prefetch", prefetch}, {"speculate", speculate != Speculation::kOff}, {"systems", systems},
          {"store", store}, {"data", data}, {"policy", policy}, {"reorder_every", reorder_every},
          {"remote", remote}, {"remote_bw", remote_bw}});
  if (kv_codec != "fp16") j["kv_codec"] = kv_codec;  // fp16 runs' JSON stays as it was
  if (const char* from = SpeculationModeOf(speculate).json_from) j["speculate_from"] = from;  // as kv_codec
  if (read_ahead != 1) j["read_ahead"] = read_ahead;  // likewise
  AddImportanceJson(select.importance, &j);
  if (AnyReadsDigests(systems)) j["digest"] = DigestJson(select.digest);
  if (!task_file.empty()) j["task_file"] = task_file;
  if (task == kRetrievalTask)  // the generator's parameters; the haystack size is prefix_tokens, its seed `seed`
    j["retrieval"] = {{"needles_per_1k", retrieval.needles_per_1k}, {"choices", retrieval.choices}};
  return j;
}

namespace {

StatusOr<std::vector<System>> ParseSystems(const RunConfig& o) {
  std::vector<System> systems;
  for (const std::string& name : o.systems) {
    ASSIGN_OR_RETURN(System s, ParseSystem(name, o.select));
    if (!s.served_from_store)
      return Status::InvalidArgument("--system " + name + ": the store does not keep a prefix's own importance yet; `impress eval --system " + name + "` runs it");
    s.select.seed = o.seed;
    if (s.reads_digests && !o.remote.empty())  // adopted chunks come without digests
      return Status::InvalidArgument("--system " + name + " does not run with --remote yet: chunks adopted from the "
                                     "cluster carry no digests");
    if (!o.policy.empty()) {
      ASSIGN_OR_RETURN(s.policy, ParsePolicy(o.policy));
    }
    systems.push_back(s);
  }
  return systems;
}

// What every system of a run serves: the prefix pool, the questions asked
// behind it and the request stream (each request names a prefix and a question).
struct Workload {
  std::vector<TaskLine> questions;
  std::vector<PooledPrefix> pool;
  std::vector<std::vector<int32_t>> pool_ids;
  std::vector<Request> stream;
  std::string source;  // where the questions come from, for errors: a task file's path, else empty
};

// Each request asks the next question of its prefix in turn: prefix i's
// questions are questions[first[i]], ..., questions[first[i] + count[i] - 1].
void AskInTurn(const std::vector<int>& first, const std::vector<int>& count, std::vector<Request>* stream) {
  std::vector<int> asked(first.size(), 0);
  for (Request& r : *stream) r.doc = first[r.prefix] + asked[r.prefix]++ % count[r.prefix];
}

// A long-context workload: each context is a prefix of the pool and
// requests ask its own questions in turn (the stream's prefix choice as for
// the few-shot tasks).
Workload ContextWorkload(std::vector<TaskContext> contexts, const RunConfig& o) {
  Workload w;
  std::vector<int> first, count;
  for (TaskContext& x : contexts) {
    first.push_back(static_cast<int>(w.questions.size()));
    count.push_back(static_cast<int>(x.lines.size()));
    for (TaskLine& l : x.lines) w.questions.push_back(std::move(l));
    w.pool.push_back(PooledPrefix{std::move(x.text), 0, 0});
  }
  RequestStreamOptions ro{o.warmup + o.requests, o.mean, o.spread, o.seed};
  w.stream = MakeRequestStream(static_cast<int>(w.pool.size()), static_cast<int>(w.questions.size()), ro);
  AskInTurn(first, count, &w.stream);
  return w;
}

// The retrieval task's workload: o.pool haystacks and their questions.
StatusOr<Workload> LoadRetrievalWorkload(const Tokenizer& tok, const RunConfig& o, int64_t tokens) {
  const TaskSpec& piqa = *FindTask("piqa");
  ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(piqa, SplitPath(o.data, piqa, piqa.train_split)));
  RetrievalOptions ro = o.retrieval;
  ro.haystack_tokens = tokens;
  ro.seed = o.seed;
  ASSIGN_OR_RETURN(std::vector<Haystack> hays, MakeHaystacks(RetrievalFiller(train), tok, ro, o.pool));
  return ContextWorkload(HaystackContexts(std::move(hays)), o);
}

// A task file's workload: its distinct contexts are the pool (--pool does
// not apply). Every line must fit the model's positions with its new tokens.
StatusOr<Workload> LoadTaskFileWorkload(const Model& m, const Tokenizer& tok, const RunConfig& o) {
  ASSIGN_OR_RETURN(std::vector<TaskContext> contexts, LoadTaskFile(o.task_file));
  for (const TaskContext& x : contexts) {
    const std::string first = o.task_file + ":" + std::to_string(x.lines.front().line);
    ASSIGN_OR_RETURN(std::vector<int32_t> prefix, tok.Encode(x.text, false));
    RETURN_IF_ERROR(ValidateTokens(m.config(), prefix, 0).WithContext("the shared prefix").WithContext(first));
    for (const TaskLine& l : x.lines) {
      const std::string where = o.task_file + ":" + std::to_string(l.line);
      StatusOr<ScoredContext> ctx = TokenizeContext(tok, x.text + l.doc.text);
      if (!ctx.ok()) return ctx.status().WithContext(where);
      RETURN_IF_ERROR(ValidateTokens(m.config(), ctx->ids, l.generates() ? l.max_new_tokens : 0).WithContext(where));
    }
  }
  Workload w = ContextWorkload(std::move(contexts), o);
  w.source = o.task_file;
  return w;
}

StatusOr<Workload> LoadWorkload(const Model& m, const Tokenizer& tok, const TaskSpec* task, const RunConfig& o) {
  Workload w;
  const int64_t tokens = std::min<int64_t>(o.prefix_tokens, m.config().max_positions - 256);
  if (!o.task_file.empty()) {
    ASSIGN_OR_RETURN(w, LoadTaskFileWorkload(m, tok, o));
  } else if (!task->choice()) {
    ASSIGN_OR_RETURN(w, LoadRetrievalWorkload(tok, o, tokens));
  } else {
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(*task, SplitPath(o.data, *task, task->train_split)));
    ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadSplit(*task, SplitPath(o.data, *task, task->eval_split)));
    for (Doc& d : docs) {
      w.questions.emplace_back();
      w.questions.back().line = static_cast<int>(w.questions.size());
      w.questions.back().doc = std::move(d);
    }
    PrefixPoolOptions po{o.pool, static_cast<int>(tokens), o.seed};
    ASSIGN_OR_RETURN(w.pool, BuildPrefixPool(train, tok, po));
    RequestStreamOptions ro{o.warmup + o.requests, o.mean, o.spread, o.seed};
    w.stream = MakeRequestStream(o.pool, static_cast<int>(w.questions.size()), ro);
  }
  for (auto& p : w.pool) {
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(p.text, false));
    p.tokens = static_cast<int64_t>(ids.size());
    w.pool_ids.push_back(std::move(ids));
  }
  return w;
}

// The store a system reuses KV from, filled with the pool (none for recomp).
StatusOr<std::unique_ptr<PrefixStore>> OpenSystemStore(Model& m, const RunConfig& o, const System& system,
                                                      RemoteStore* remote, const Workload& w, SystemRun* run) {
  if (!system.reuse) return std::unique_ptr<PrefixStore>();
  if (o.store.empty()) return Status::InvalidArgument("--store DIR is required for systems that reuse prefix KV");
  PrefixStoreOptions so;
  so.dir = o.store;
  so.chunk_tokens = o.chunk;
  so.kv_dtype = o.kv_dtype;
  ASSIGN_OR_RETURN(so.kv_codec, ParseKvCodec(o.kv_codec));
  so.tiers = TiersOver(CacheLevels(o.cache_bytes, o.h2d_bw));
  so.policy = system.policy;
  so.disk_bytes_per_second = o.disk_bw;
  so.probe_layout = system.select.probe_layout;
  so.stored_copies = false;  // every system starts from the pool in token order
  // One store serves the run's systems: it keeps digests from the start when any of them scores by them.
  if (AnyReadsDigests(o.systems)) so.digests = o.select.digest.codec;
  if (remote != nullptr) so.tiers.push_back(BackendTier(Tier::kRemote, RemoteBackendFactory(remote)));
  run->policy = PolicyName(system.policy);
  run->fill.emplace();
  const int64_t refused = remote != nullptr ? remote->counters().codec_mismatches.load() : 0;
  auto store = OpenFilledStore(m, so, w.pool_ids, &*run->fill);
  if (remote != nullptr) run->fill->remote_codec_mismatches = remote->counters().codec_mismatches.load() - refused;
  // On CUDA the caches' and the reads' pinned memory exists before the first request is timed.
  if (store.ok()) (*store)->WarmPinnedPool(o.cache_bytes.Total());
  return store;
}

// One request of the stream, served (its TTFT's trace in `trace`) and
// answered: a multiple-choice question's choices scored, or a generation
// question's greedy output over the same KV (scored as RULER scores it).
StatusOr<RequestRow> AnswerRequest(Model& m, const Tokenizer& tok, const RunConfig& o, const System& system,
                                   PrefixStore* store, const Workload& w, const Request& r, RequestTrace* trace) {
  const TaskLine& question = w.questions[r.doc];
  ASSIGN_OR_RETURN(ScoredContext ctx, TokenizeContext(tok, w.pool[r.prefix].text + question.doc.text));
  const auto& pid = w.pool_ids[r.prefix];
  int64_t storable = 0;
  while (storable < static_cast<int64_t>(std::min(pid.size(), ctx.ids.size())) && pid[storable] == ctx.ids[storable])
    ++storable;
  std::unique_ptr<RewindableKv> kv;
  ASSIGN_OR_RETURN(at::Tensor last, RunRequest(system, m, store, ctx.ids, storable, &kv, trace,
                                               RequestOptions{o.prefetch, o.speculate, o.read_ahead}));
  RequestRow row{r.prefix, r.doc, trace->ttft_ms, trace->io_ms, trace->select_ms, trace->reused_tokens,
                 trace->load.bytes, trace->kv_chunks(),
                 trace->recomputed_after_error, trace->healed_chunks, 0, {}, trace->digest_bytes, std::nullopt, 0, 0};
  if (!w.source.empty()) row.line = question.line;
  if (!question.generates()) {
    ASSIGN_OR_RETURN(DocScore score, ScoreChoices(m, tok, ctx, last, *kv, question.doc));
    row.pred = score.pred;
    row.loglik = std::move(score.loglik);
    return row;
  }
  Generation g = GreedyContinue(m, tok, last, *kv, static_cast<int64_t>(ctx.ids.size()), question.max_new_tokens);
  row.pred = -1;
  row.answers_found = AnswerShare(question.answers, g.text);
  row.output = std::move(g.text);
  return row;
}

// One system over the whole stream: its warm-up, then its measured requests.
StatusOr<SystemRun> RunSystem(Model& m, const Tokenizer& tok, const RunConfig& o, const System& system,
                              RemoteStore* remote, const Workload& w) {
  const int layers = m.config().num_layers;
  SystemRun run;
  run.system = system.name;
  run.selection = SelectionCounters(layers);
  // The remote tally counts what this system's store did, its fill's writes
  // included: taken before the fill, whose writes are asynchronous, and
  // after the Flush below, never while a write is in flight.
  const RemoteTally remote_before = remote ? TallyOf(remote->counters()) : RemoteTally();
  ASSIGN_OR_RETURN(std::unique_ptr<PrefixStore> store, OpenSystemStore(m, o, system, remote, w, &run));
  // IMPRESS's reordering: one pass ends the warm-up (finished before
  // measuring); reorder_every adds passes beside the measured requests.
  std::unique_ptr<ReorderWorker> reorderer;
  if (system.reorder && store) reorderer = std::make_unique<ReorderWorker>(*store, ReorderWorkerOptions{});
  Progress progress(std::string("run ") + run.system, static_cast<int64_t>(w.stream.size()));
  for (size_t i = 0; i < w.stream.size(); ++i) {
    RequestTrace trace;
    ASSIGN_OR_RETURN(RequestRow row, AnswerRequest(m, tok, o, system, store.get(), w, w.stream[i], &trace));
    progress.Update(static_cast<int64_t>(i) + 1);
    if (reorderer && static_cast<int>(i) + 1 == o.warmup) {
      reorderer->Trigger();
      reorderer->Drain();
    } else if (reorderer && o.reorder_every > 0 && (i + 1) % o.reorder_every == 0) {
      reorderer->Trigger();
    }
    if (static_cast<int>(i) < o.warmup) continue;
    run.Add(trace, layers);
    const TaskLine& question = w.questions[row.doc];
    run.correct += question.generates() ? row.answers_found == 1.0 : row.pred == question.doc.gold;
    run.per_request.push_back(std::move(row));
    run.n++;
  }
  if (reorderer) {
    reorderer->Drain();
    RETURN_IF_ERROR(reorderer->status());
    run.reorder = true;
    run.reorder_passes = reorderer->passes();
    run.reordered = reorderer->stats();
    run.footprint = store->Footprint();
  }
  if (remote) {
    remote->Flush();  // this system's writes count as its own
    run.remote = TallyOf(remote->counters()) - remote_before;
  }
  return run;
}

// What identifies `s`'s run under `o` in a RunMemo: the whole configuration
// with this system alone, less the axes it does not depend on.
std::string MemoKey(const RunConfig& o, const System& s) {
  nlohmann::ordered_json j = o.ToJson();
  j["systems"] = {s.name};
  if (!s.depends_on_retention) j.erase("retention");
  if (!s.uses_probe_heads) {
    j.erase("alpha");
    j.erase("itf_unit");
  }
  return j.dump();
}

}  // namespace

StatusOr<RunResults> RunSystems(Model& m, const Tokenizer& tok, const RunConfig& o, RunMemo* memo) {
  if (o.task_file.empty()) RETURN_IF_ERROR(CheckTaskName(o.task, false));
  const TaskSpec* task = o.task_file.empty() ? FindTask(o.task) : nullptr;  // nullptr: a task file
  ASSIGN_OR_RETURN(std::vector<System> systems, ParseSystems(o));
  if (!o.remote.empty()) memo = nullptr;
  std::optional<Workload> w;  // loaded for the first system that runs here
  RunResults result;
  result.config = o;
  result.device = m.device().is_cuda() ? "cuda" : "cpu";
  ASSIGN_OR_RETURN(const at::ScalarType kv_type, KvDtype(o.kv_dtype));
  result.kv_bytes_per_token = m.config().KvBytesPerToken(static_cast<int>(c10::elementSize(kv_type)));
  std::unique_ptr<RemoteStore> remote;
  if (!o.remote.empty()) {
    ASSIGN_OR_RETURN(remote, RemoteStore::Connect(RemoteOptions{o.remote, o.remote_bw}));
  }
  for (const System& system : systems) {
    std::string key;
    if (memo != nullptr) {
      key = MemoKey(o, system);
      if (auto earlier = memo->find(key); earlier != memo->end()) {
        result.runs.push_back(earlier->second);
        result.runs.back().repeated = true;
        continue;
      }
    }
    if (!w) {
      ASSIGN_OR_RETURN(Workload loaded, LoadWorkload(m, tok, task, o));
      w = std::move(loaded);
    }
    ASSIGN_OR_RETURN(SystemRun run, RunSystem(m, tok, o, system, remote.get(), *w));
    result.runs.push_back(run.Summarize(o.reorder_every));
    if (memo != nullptr) (*memo)[key] = result.runs.back();
  }
  return result;
}

}  // namespace impress
