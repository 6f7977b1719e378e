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
#include "data/workload.h"
#include "engine/prefix_store.h"
#include "engine/remote_backend.h"
#include "engine/reorder_worker.h"
#include "engine/request.h"
#include "engine/stored_kv.h"
#include "eval/scorer.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "remote/remote_store.h"

namespace impress {
namespace {

// What one system's measured requests add up to.
struct SystemRun {
  std::string system;
  std::vector<double> ttft, io, select;
  double importance = 0, gather = 0, decision = 0;  // select's parts, summed
  double placement = 0;
  std::vector<RequestRow> per_request;  // measured requests, in order (tails)
  TierCounts bytes, hits;
  int64_t chunk_loads = 0, disk_chunks = 0, remote_chunks = 0;
  int64_t reused = 0, computed = 0, recomputed_after_error = 0, healed_chunks = 0;
  int correct = 0, n = 0;
  std::string policy = "-";
  double important_sum = 0;
  int64_t selected_chunks = 0;           // (chunk, layer) pairs read for the tokens selection kept (Fig. 20)
  TierCounts kv_tier;                    // ... by the tier they came from (Fig. 21)
  std::vector<int64_t> layer_kv_chunks;  // per layer: chunks whose K/V a selection read
  int64_t prefix_chunks = 0;             // chunks available per layer, summed over requests
  int64_t speculated = 0, speculated_used = 0;  // RequestTrace's, summed
  // Host read-backs: summed over (request, layer) pairs on fallback layers
  // and elsewhere, those pairs' counts, and the most on one layer.
  int64_t syncs_fallback = 0, syncs_other = 0, layers_fallback = 0, layers_other = 0, syncs_max = 0;
  SelectionCounters selection;
  bool reorder = false;
  int64_t reorder_passes = 0;
  ReorderStats reordered;
  ReorderFootprint footprint;
  // CUDA: per layer, summed over requests, the read-ahead's device interval,
  // the layer's compute and the compute stream's wait (engine/load_stream.h).
  std::vector<double> device_load, device_compute, device_wait;
  double device_busy = 0, device_hidden = 0;  // the load stream's busy ms, and of it, overlapping compute
  int64_t device_requests = 0;
  std::optional<FillCounts> fill;      // what opening the store computed or adopted
  std::optional<RemoteTally> remote;   // the remote tier's counters over this system's run (with --remote)

  void Add(const RequestTrace& t, int layers);
  RunResult Summarize(int reorder_every) const;
};

void SystemRun::Add(const RequestTrace& t, int layers) {
  ttft.push_back(t.ttft_ms);
  io.push_back(t.io_ms);
  select.push_back(t.select_ms);
  importance += t.importance_ms, gather += t.gather_ms, decision += t.decision_ms;
  placement += t.placement_ms;
  bytes += t.load.bytes;
  hits += t.load.hits;
  chunk_loads += t.load.chunks;
  disk_chunks += t.load.disk_chunks;
  remote_chunks += t.load.remote_chunks;
  reused += t.reused_tokens;
  computed += t.computed_tokens;
  recomputed_after_error += t.recomputed_after_error;
  healed_chunks += t.healed_chunks;
  selection.Merge(t.selection);
  important_sum += t.important_share_sum;
  selected_chunks += t.kv_chunks();
  kv_tier += t.kv_chunk_tier;
  layer_kv_chunks.resize(layers, 0);
  for (size_t l = 0; l < t.layer_kv_chunks.size() && l < layer_kv_chunks.size(); ++l)
    layer_kv_chunks[l] += t.layer_kv_chunks[l];
  prefix_chunks += t.prefix_chunks;
  if (!t.device_layers.empty()) {
    const size_t n = t.device_layers.size();
    device_load.resize(n, 0), device_compute.resize(n, 0), device_wait.resize(n, 0);
    for (size_t l = 0; l < n; ++l) {
      const DeviceLayerTimes& d = t.device_layers[l];
      for (const auto& [b, e] : d.load_busy) device_load[l] += e - b;
      device_compute[l] += d.compute_end - d.compute_begin;
      device_wait[l] += d.wait;
    }
    double busy = 0;
    device_hidden += HiddenLoadMs(t.device_layers, &busy);
    device_busy += busy;
    device_requests++;
  }
  speculated += t.speculated_chunks;
  speculated_used += t.speculated_used;
  for (size_t l = 0; l < t.layer_host_syncs.size(); ++l) {
    const bool fell_back = l < t.selection.fallbacks.size() && t.selection.fallbacks[l] > 0;
    (fell_back ? syncs_fallback : syncs_other) += t.layer_host_syncs[l];
    (fell_back ? layers_fallback : layers_other)++;
    syncs_max = std::max(syncs_max, t.layer_host_syncs[l]);
  }
}

RunResult SystemRun::Summarize(int reorder_every) const {
  RunResult r;
  r.system = system;
  r.requests = n;
  r.ttft_ms = {Mean(ttft), Percentile(ttft, 50), Percentile(ttft, 99)};
  r.io_ms_mean = Mean(io);
  r.io_share = r.ttft_ms.mean > 0 ? r.io_ms_mean / r.ttft_ms.mean : 0;
  r.select_ms_mean = Mean(select);
  if (n > 0) r.select_parts = {importance / n, decision / n, gather / n};
  if (n > 0) r.placement_ms_mean = placement / n;
  auto per = [](int64_t syncs, int64_t layers) { return layers > 0 ? double(syncs) / layers : 0.0; };
  r.host_syncs_per_layer = {per(syncs_fallback + syncs_other, layers_fallback + layers_other),
                            per(syncs_fallback, layers_fallback), per(syncs_other, layers_other), syncs_max};
  r.bytes_read = bytes;
  r.hit_gpu = chunk_loads ? double(hits[Tier::kGpu]) / chunk_loads : 0;
  r.hit_cpu = chunk_loads ? double(hits[Tier::kCpu]) / chunk_loads : 0;
  r.chunks_read = disk_chunks;
  r.remote_chunks_read = remote_chunks;
  r.kept_share = selection.KeptShare();
  // Selection reads K/V of chunks holding kept tokens; as reads every chunk.
  r.kv_chunks_per_request = n ? double(r.kept_share < 1.0 ? selected_chunks : chunk_loads) / n : 0;
  // GPU hits among the chunks whose K/V were read (every load for as).
  const int64_t kv_n = kv_tier.Total();
  r.kv_hit_gpu = r.kept_share < 1.0 ? (kv_n ? double(kv_tier[Tier::kGpu]) / kv_n : 0) : r.hit_gpu;
  r.chunk_loads = chunk_loads;
  r.reused_tokens = reused;
  r.computed_tokens = computed;
  r.recomputed_after_error = recomputed_after_error;
  r.healed_chunks = healed_chunks;
  r.acc = n ? double(correct) / n : 0;
  r.policy = policy;
  r.fallback_share = selection.FallbackShare();
  r.important_share_of_chunks_read = selected_chunks ? important_sum / selected_chunks : 0;
  for (size_t l = 0; l < selection.total.size(); ++l) {
    r.layer_kept_share.push_back(selection.total[l] ? double(selection.kept[l]) / selection.total[l] : 1.0);
    r.layer_kv_load_ratio.push_back(prefix_chunks && l < layer_kv_chunks.size() ? double(layer_kv_chunks[l]) / prefix_chunks
                                                                                : 1.0);
    r.layer_fallback_share.push_back(selection.probes[l] ? double(selection.fallbacks[l]) / selection.probes[l] : 0.0);
  }
  r.speculated_chunks_per_request = n ? double(speculated) / n : 0;
  r.speculated_used_share = speculated ? double(speculated_used) / speculated : 0;
  r.per_request = per_request;
  if (device_requests > 0) {
    // The share of the load stream's busy time that overlaps the compute
    // stream's (docs/gpu.md): copies hidden under compute.
    DeviceTimelineSection d;
    const double reqs = static_cast<double>(device_requests);
    for (size_t l = 0; l < device_load.size(); ++l)
      d.per_layer_mean.push_back({device_load[l] / reqs, device_compute[l] / reqs, device_wait[l] / reqs});
    d.copy_hidden_share = device_busy > 0 ? device_hidden / device_busy : 0.0;
    r.device_timeline = d;
  }
  r.fill = fill;
  r.remote = remote;
  if (reorder) {
    ReorderSection x;
    x.every_requests = reorder_every;
    x.passes = reorder_passes;
    x.nodes_reordered = reordered.nodes_reordered;
    x.chunks_written = reordered.chunks_written;
    x.bytes_freed = reordered.bytes_freed;
    x.log_bytes_dropped = reordered.log_bytes_dropped;
    x.housekeeping_failures = reordered.housekeeping_failures;
    x.mapping_bytes = footprint.mapping_bytes;
    x.score_bytes = footprint.score_bytes;
    x.history_bytes = footprint.history_bytes;
    x.chunk_bytes = footprint.chunk_bytes;
    r.reorder = x;
  }
  return r;
}

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
    if (store->index().tree().NewChunks(pool_ids[p]) > 0) {
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

nlohmann::ordered_json RunConfig::ToJson() const {
  nlohmann::ordered_json j = {{"task", task}, {"pool", pool}, {"prefix_tokens", prefix_tokens}, {"requests", requests},
          {"warmup", warmup}, {"chunk", chunk}, {"kv_dtype", kv_dtype}, {"gpu_cache", gpu_cache},
          {"cpu_cache", cpu_cache}, {"retention", retention}, {"alpha", alpha}, {"itf_unit", itf_unit},
          {"probe_layout", probe_layout}, {"disk_bw", disk_bw}, {"h2d_bw", h2d_bw}, {"seed", seed}, {"mean", mean},
          {"spread", spread}, {"prefetch", prefetch}, {"speculate", speculate}, {"systems", systems},
          {"store", store}, {"data", data}, {"policy", policy}, {"reorder_every", reorder_every},
          {"remote", remote}, {"remote_bw", remote_bw}};
  if (kv_codec != "fp16") j["kv_codec"] = kv_codec;  // fp16 runs' JSON stays as it was
  if (importance_window > 0 || importance_pool > 1) {  // likewise for the papers' importance
    j["importance_window"] = importance_window;
    j["importance_pool"] = importance_pool;
  }
  if (task == kRetrievalTask)  // the generator's parameters; the haystack size is prefix_tokens, its seed `seed`
    j["retrieval"] = {{"needles_per_1k", retrieval.needles_per_1k}, {"choices", retrieval.choices}};
  return j;
}

namespace {

StatusOr<std::vector<System>> ParseSystems(const RunConfig& o) {
  std::vector<System> systems;
  for (const std::string& name : o.systems) {
    ASSIGN_OR_RETURN(System s, ParseSystem(name, o.retention, o.alpha));
    if (!s.served_from_store)
      return Status::InvalidArgument("--system " + name + ": the store does not keep a prefix's own importance yet; `impress eval --system " + name + "` runs it");
    ASSIGN_OR_RETURN(s.select.unit, ParseItfUnit(o.itf_unit));
    ASSIGN_OR_RETURN(s.select.probe_layout, ParseProbeLayout(o.probe_layout));
    s.select.seed = o.seed;
    ASSIGN_OR_RETURN(s.select.importance, ParseImportanceShape(o.importance_window, o.importance_pool));
    if (!o.policy.empty()) {
      ASSIGN_OR_RETURN(s.policy, ParsePolicy(o.policy));
    }
    systems.push_back(s);
  }
  return systems;
}

// What every system of a run serves: the prefix pool and the request stream.
struct Workload {
  std::vector<Doc> docs;
  std::vector<PooledPrefix> pool;
  std::vector<std::vector<int32_t>> pool_ids;
  std::vector<Request> stream;
};

// The retrieval task's workload: the pool is o.pool haystacks, each
// request asks the next question of the haystack its prefix index names.
StatusOr<Workload> LoadRetrievalWorkload(const Tokenizer& tok, const RunConfig& o, int64_t tokens) {
  Workload w;
  const TaskSpec& piqa = *FindTask("piqa");
  ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(piqa, SplitPath(o.data, piqa, piqa.train_split)));
  RetrievalOptions ro = o.retrieval;
  ro.haystack_tokens = tokens;
  ro.seed = o.seed;
  ASSIGN_OR_RETURN(std::vector<Haystack> hays, MakeHaystacks(RetrievalFiller(train), tok, ro, o.pool));
  std::vector<int> first;  // each haystack's first question in w.docs
  for (Haystack& h : hays) {
    first.push_back(static_cast<int>(w.docs.size()));
    w.docs.insert(w.docs.end(), h.questions.begin(), h.questions.end());
    w.pool.push_back(PooledPrefix{std::move(h.text), 0, h.tokens});
  }
  RequestStreamOptions ro_stream{o.warmup + o.requests, o.mean, o.spread, o.seed};
  w.stream = MakeRequestStream(o.pool, static_cast<int>(w.docs.size()), ro_stream);
  const int per = NeedlesPerHaystack(ro);
  std::vector<int> asked(hays.size(), 0);
  for (Request& r : w.stream) r.doc = first[r.prefix] + asked[r.prefix]++ % per;
  return w;
}

StatusOr<Workload> LoadWorkload(const Model& m, const Tokenizer& tok, const TaskSpec* task, const RunConfig& o) {
  Workload w;
  const int64_t tokens = std::min<int64_t>(o.prefix_tokens, m.config().max_positions - 256);
  if (task == nullptr) {
    ASSIGN_OR_RETURN(w, LoadRetrievalWorkload(tok, o, tokens));
  } else {
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(*task, SplitPath(o.data, *task, task->train_split)));
    ASSIGN_OR_RETURN(w.docs, LoadSplit(*task, SplitPath(o.data, *task, task->eval_split)));
    PrefixPoolOptions po{o.pool, static_cast<int>(tokens), o.seed};
    ASSIGN_OR_RETURN(w.pool, BuildPrefixPool(train, tok, po));
    RequestStreamOptions ro{o.warmup + o.requests, o.mean, o.spread, o.seed};
    w.stream = MakeRequestStream(o.pool, static_cast<int>(w.docs.size()), ro);
  }
  for (const auto& p : w.pool) {
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(p.text, false));
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
  so.tiers.levels = GpuCpuLevels(o.gpu_cache, o.cpu_cache, o.h2d_bw);
  so.tiers.policy = system.policy;
  so.disk_bytes_per_second = o.disk_bw;
  so.probe_layout = system.select.probe_layout;
  so.stored_copies = false;  // every system starts from the pool in token order
  if (remote != nullptr) so.backends.push_back(RemoteBackendFactory(remote));
  run->policy = PolicyName(system.policy);
  run->fill.emplace();
  const int64_t refused = remote != nullptr ? remote->counters().codec_mismatches.load() : 0;
  auto store = OpenFilledStore(m, so, w.pool_ids, &*run->fill);
  if (remote != nullptr) run->fill->remote_codec_mismatches = remote->counters().codec_mismatches.load() - refused;
  // On CUDA the caches' and the reads' pinned memory exists before the first request is timed.
  if (store.ok()) (*store)->reader().WarmPinnedPool(o.gpu_cache + o.cpu_cache);
  return store;
}

// One system over the whole stream: its warm-up, then its measured requests.
StatusOr<SystemRun> RunSystem(Model& m, const Tokenizer& tok, const RunConfig& o, const System& system,
                              RemoteStore* remote, const Workload& w) {
  const int layers = m.config().num_layers;
  SystemRun run;
  run.system = system.name;
  run.selection = SelectionCounters(layers);
  ASSIGN_OR_RETURN(std::unique_ptr<PrefixStore> store, OpenSystemStore(m, o, system, remote, w, &run));
  const RemoteTally remote_before = remote ? TallyOf(remote->counters()) : RemoteTally();
  // IMPRESS's reordering: one pass ends the warm-up (finished before
  // measuring); reorder_every adds passes beside the measured requests.
  std::unique_ptr<ReorderWorker> reorderer;
  if (system.reorder && store) reorderer = std::make_unique<ReorderWorker>(*store, ReorderWorkerOptions{});
  Progress progress(std::string("run ") + run.system, static_cast<int64_t>(w.stream.size()));
  for (size_t i = 0; i < w.stream.size(); ++i) {
    const Request& r = w.stream[i];
    const Doc& doc = w.docs[r.doc];
    ASSIGN_OR_RETURN(ScoredContext ctx, TokenizeContext(tok, w.pool[r.prefix].text + doc.text));
    const auto& pid = w.pool_ids[r.prefix];
    int64_t storable = 0;
    while (storable < static_cast<int64_t>(std::min(pid.size(), ctx.ids.size())) && pid[storable] == ctx.ids[storable])
      ++storable;
    RequestTrace trace;
    std::unique_ptr<RewindableKv> kv;
    ASSIGN_OR_RETURN(at::Tensor last, RunRequest(system, m, store.get(), ctx.ids, storable, &kv, &trace,
                                                 RequestOptions{o.prefetch, o.speculate}));
    ASSIGN_OR_RETURN(DocScore score, ScoreChoices(m, tok, ctx, last, *kv, doc));
    progress.Update(static_cast<int64_t>(i) + 1);
    if (reorderer && static_cast<int>(i) + 1 == o.warmup) {
      reorderer->Trigger();
      reorderer->Drain();
    } else if (reorderer && o.reorder_every > 0 && (i + 1) % o.reorder_every == 0) {
      reorderer->Trigger();
    }
    if (static_cast<int>(i) < o.warmup) continue;
    run.per_request.push_back({r.prefix, r.doc, trace.ttft_ms, trace.io_ms, trace.select_ms, trace.reused_tokens,
                               trace.load.bytes[Tier::kDisk], trace.load.bytes[Tier::kRemote], trace.kv_chunks(),
                               trace.recomputed_after_error, trace.healed_chunks, score.pred, score.loglik});
    run.Add(trace, layers);
    run.correct += score.pred == doc.gold;
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
  const TaskSpec* task = FindTask(o.task);  // nullptr: retrieval
  if (task == nullptr && o.task != kRetrievalTask)
    return Status::InvalidArgument("--task: unknown task '" + o.task + "' (" + JoinNames(TaskNames()) + ")");
  ASSIGN_OR_RETURN(std::vector<System> systems, ParseSystems(o));
  if (!o.remote.empty()) memo = nullptr;
  std::optional<Workload> w;  // loaded for the first system that runs here
  RunResults result;
  result.config = o;
  result.device = m.device().is_cuda() ? "cuda" : "cpu";
  result.kv_bytes_per_token = m.config().KvBytesPerToken(o.kv_dtype == "float32" ? 4 : 2);
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

namespace {

std::string Size(double bytes) {
  if (bytes <= 0) return "off";
  char buf[32];
  if (bytes >= (1 << 30)) std::snprintf(buf, sizeof buf, "%.3gG", bytes / (1 << 30));
  else if (bytes >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.3gM", bytes / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.3gK", bytes / 1024);
  return buf;
}

}  // namespace

void PrintRunReport(const RunResults& result, std::FILE* out) {
  const RunConfig& c = result.config;
  std::fprintf(out, "model %s, task %s, pool %d x %d tokens, %d requests (+%d warm-up), chunk %d, kv %s\n",
               result.model.empty() ? "?" : result.model.c_str(), c.task.c_str(), c.pool, c.prefix_tokens, c.requests,
               c.warmup, c.chunk, c.kv_dtype.c_str());
  std::fprintf(out, "caches: gpu %s (%s), cpu %s; disk cap %s, h2d cap %s; KV %lld bytes/token; retention %.3g, alpha %.3g, ITF unit %s, probe heads %s%s%s\n\n",
               Size(static_cast<double>(c.gpu_cache)).c_str(),
               result.device == "cuda" ? "CUDA" : "emulated in host memory", Size(static_cast<double>(c.cpu_cache)).c_str(),
               Size(c.disk_bw).c_str(), Size(c.h2d_bw).c_str(), static_cast<long long>(result.kv_bytes_per_token),
               c.retention, c.alpha, c.itf_unit.c_str(), c.probe_layout.c_str(), c.prefetch ? "" : "; no prefetch",
               c.speculate ? "; speculative K/V" : "");
  std::fprintf(out, "| system | policy | ttft mean ms | p50 | p99 | io mean ms | io share | select ms | MB gpu | MB cpu | MB disk | hit gpu | hit cpu | chunks loaded | from disk | KV chunks/req | KV hit gpu | kept | fallback | acc |\n");
  std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : result.runs) {
    const TierCounts& b = r.bytes_read;
    std::fprintf(out, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %lld | %lld | %.1f | %.2f | %.3f | %.3f | %.3f |\n",
                 r.system.c_str(), r.policy.c_str(), r.ttft_ms.mean, r.ttft_ms.p50, r.ttft_ms.p99, r.io_ms_mean,
                 r.io_share, r.select_ms_mean, b[Tier::kGpu] / 1e6, b[Tier::kCpu] / 1e6, b[Tier::kDisk] / 1e6,
                 r.hit_gpu, r.hit_cpu, static_cast<long long>(r.chunk_loads), static_cast<long long>(r.chunks_read),
                 r.kv_chunks_per_request, r.kv_hit_gpu, r.kept_share, r.fallback_share, r.acc);
  }
  std::string repeated;
  for (const RunResult& r : result.runs)
    if (r.repeated) repeated += (repeated.empty() ? "" : ", ") + r.system;
  if (!repeated.empty())
    std::fprintf(out, "\nrepeated from an earlier point of the sweep, which it does not depend on: %s\n", repeated.c_str());
  // Selection time in its parts, for the systems that spend any.
  bool selects = false;
  for (const RunResult& r : result.runs) selects |= r.select_ms_mean > 0;
  if (selects) {
    std::fprintf(out, "\nselection per request (ms): importance, deciding (top-k, trust test, agreed set), gathering (chunks into tensors); "
                      "beside it, the cache policy placing chunks on what was used (not selection)\n");
    std::fprintf(out, "| system | select ms | importance | decision | gather | select share of ttft | placement ms |\n|---|---|---|---|---|---|---|\n");
    for (const RunResult& r : result.runs) {
      if (r.select_ms_mean <= 0) continue;
      const SelectParts& p = r.select_parts;
      std::fprintf(out, "| %s | %.1f | %.1f | %.1f | %.1f | %.3f | %.1f |\n", r.system.c_str(), r.select_ms_mean,
                   p.importance_ms, p.decision_ms, p.gather_ms,
                   r.ttft_ms.mean > 0 ? r.select_ms_mean / r.ttft_ms.mean : 0.0, r.placement_ms_mean);
    }
  }
  // The remote tier: what each system read from it, its faults, and what
  // opening the store adopted from it instead of computing.
  if (!c.remote.empty()) {
    std::fprintf(out, "\nremote tier %s (read cap %s):\n", c.remote.c_str(), Size(c.remote_bw).c_str());
    std::fprintf(out, "| system | MB remote | chunks from remote | parts missing | corrupt | read errors | recomputed requests | adopted chunks | computed prefixes | chunks published | MOVED | ASK | slot reloads | reconnects | timeouts |\n");
    std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const RunResult& r : result.runs) {
      if (!r.remote || !r.fill) continue;  // systems that do not reuse KV
      const RemoteTally& x = *r.remote;
      auto ll = [](int64_t v) { return static_cast<long long>(v); };
      std::fprintf(out, "| %s | %.1f | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld |\n",
                   r.system.c_str(), r.bytes_read[Tier::kRemote] / 1e6, ll(r.remote_chunks_read), ll(x.parts_missing),
                   ll(x.parts_corrupt), ll(x.read_errors), ll(r.recomputed_after_error), ll(r.fill->adopted_chunks),
                   ll(r.fill->computed_prefixes), ll(x.chunks_written), ll(x.moved), ll(x.ask), ll(x.slot_reloads),
                   ll(x.reconnects), ll(x.timeouts));
    }
  }
  // Damage met: requests that recomputed a stored chunk, and the chunks they wrote back.
  for (const RunResult& r : result.runs) {
    if (r.recomputed_after_error == 0 && r.healed_chunks == 0) continue;
    std::fprintf(out, "\n%s: %lld requests met damaged or missing chunks; %lld chunks recomputed and written back\n",
                 r.system.c_str(), static_cast<long long>(r.recomputed_after_error),
                 static_cast<long long>(r.healed_chunks));
  }
  // Speculative K/V reads: how many, and how many the selection then needed.
  for (const RunResult& r : result.runs) {
    if (r.speculated_chunks_per_request <= 0) continue;
    std::fprintf(out, "\n%s speculative K/V: %.1f (chunk, layer) pairs read ahead per request, %.1f%% of them needed\n",
                 r.system.c_str(), r.speculated_chunks_per_request, 100.0 * r.speculated_used_share);
  }
  // Reordering: what it rewrote, and its metadata against the chunks it describes.
  for (const RunResult& r : result.runs) {
    if (!r.reorder) continue;
    const ReorderSection& f = *r.reorder;
    const double cb = f.chunk_bytes > 0 ? static_cast<double>(f.chunk_bytes) : 1.0;
    std::fprintf(out, "\n%s reordering: %lld passes, %lld node copies installed, %lld (chunk, layer) pairs written, "
                 "%.1f MB of replaced copies freed and %.1f MB of their log records dropped; "
                 "mapping lists %.3f%%, scores %.3f%% and importance history %.3f%% of chunk bytes\n",
                 r.system.c_str(), static_cast<long long>(f.passes), static_cast<long long>(f.nodes_reordered),
                 static_cast<long long>(f.chunks_written), f.bytes_freed / 1e6, f.log_bytes_dropped / 1e6,
                 100.0 * f.mapping_bytes / cb, 100.0 * f.score_bytes / cb, 100.0 * f.history_bytes / cb);
    if (f.housekeeping_failures > 0)
      std::fprintf(out, "%s reordering: %lld frees or log rewrites failed (a full disk?); later passes retried them\n",
                   r.system.c_str(), static_cast<long long>(f.housekeeping_failures));
  }
  // Fig. 19: per layer, the share of the prefix's chunks whose K/V were loaded and of IMPRESS probe tests that fell back.
  for (const RunResult& r : result.runs) {
    if (r.kept_share >= 1.0) continue;
    std::fprintf(out, "\n%s per layer (KV chunks loaded / fallback share):", r.system.c_str());
    for (size_t l = 0; l < r.layer_kv_load_ratio.size(); ++l)
      std::fprintf(out, "%s L%zu %.2f/%.2f", l % 6 == 0 ? "\n " : "", l, r.layer_kv_load_ratio[l],
                   r.layer_fallback_share[l]);
    std::fprintf(out, "\n");
  }
}

}  // namespace impress
