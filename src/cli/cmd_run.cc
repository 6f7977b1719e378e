// impress run: a request stream over a prefix pool through one or more
// systems; TTFT, I/O and accuracy per system.
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/progress.h"
#include "common/units.h"
#include "data/task.h"
#include "data/workload.h"
#include "engine/prefix_store.h"
#include "engine/reorder_worker.h"
#include "engine/request.h"
#include "eval/scorer.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct RunOptions {
  std::string model, task = "piqa", data = "data", systems = "recomp,as", store;
  int pool = 8, prefix_tokens = 2048, requests = 50, warmup = 10, chunk = 64;
  std::string gpu_cache = "64M", cpu_cache = "128M", disk_bw = "0", h2d_bw = "0";
  std::string policy = "lru", kv_dtype = "float16";
  double mean = 0.5, spread = 0.2;
  double retention = 0.25, alpha = 0.6;
  bool policy_set = false;
  uint64_t seed = 1234;
  bool no_prefetch = false;
  int reorder_every = 0;
  std::string json_path;
  RuntimeFlags runtime;
};

struct SystemRun {
  std::string system;
  std::vector<double> ttft, io, select;
  nlohmann::json per_request = nlohmann::json::array();  // measured requests, in order (tails)
  int64_t bytes[3] = {0, 0, 0}, hits[2] = {0, 0}, chunk_loads = 0, disk_chunks = 0;
  int64_t reused = 0, computed = 0, recomputed_after_error = 0;
  int correct = 0, n = 0;
  std::string policy = "-";
  double fallback_share = 0, kept_share = 1, important_share = 0;
  int64_t selected_chunks = 0;  // (chunk, layer) pairs read for the tokens selection kept (Fig. 20)
  int64_t kv_tier[3] = {0, 0, 0};  // ... by the tier they came from (Fig. 21)
  std::vector<double> layer_kept;      // per layer: kept / available prefix tokens
  std::vector<int64_t> layer_kv_chunks;  // per layer: chunks whose K/V a selection read
  int64_t prefix_chunks = 0;             // chunks available per layer, summed over requests
  std::vector<double> layer_load;      // per layer: layer_kv_chunks / prefix_chunks (Fig. 19)
  std::vector<double> layer_fallback;  // per layer: share of probe tests that fell back
  bool reorder = false;
  int64_t reorder_passes = 0;
  ReorderStats reordered;
  ReorderFootprint footprint;
};

int RunRun(const RunOptions& o) {
  ApplyRuntimeFlags(o.runtime);
  const TaskSpec* task = FindTask(o.task);
  if (task == nullptr) return Fail(Status::Error("--task: unknown task '" + o.task + "'"));
  std::vector<System> systems;
  {
    std::stringstream ss(o.systems);
    for (std::string name; std::getline(ss, name, ',');) {
      auto s = ParseSystem(name, o.retention, o.alpha);
      if (!s.ok()) return Fail(s.status());
      systems.push_back(*s);
    }
  }
  int64_t sizes[4];
  const std::string* size_args[4] = {&o.gpu_cache, &o.cpu_cache, &o.disk_bw, &o.h2d_bw};
  const char* size_names[4] = {"--gpu-cache", "--cpu-cache", "--disk-bw", "--h2d-bw"};
  for (int i = 0; i < 4; ++i) {
    auto b = ParseBytes(*size_args[i]);
    if (!b.ok()) return Fail(b.status().WithContext(size_names[i]));
    sizes[i] = *b;
  }
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());
  Model& m = **model;
  auto train = LoadSplit(*task, SplitPath(o.data, *task, task->train_split));
  if (!train.ok()) return Fail(train.status());
  auto docs = LoadSplit(*task, SplitPath(o.data, *task, task->eval_split));
  if (!docs.ok()) return Fail(docs.status());
  PrefixPoolOptions po{o.pool, std::min(o.prefix_tokens, m.config().max_positions - 256), o.seed};
  auto pool = BuildPrefixPool(*train, **tok, po);
  if (!pool.ok()) return Fail(pool.status());
  std::vector<std::vector<int32_t>> pool_ids;
  for (const auto& p : *pool) pool_ids.push_back(*(*tok)->Encode(p.text, false));
  RequestStreamOptions ro{o.warmup + o.requests, o.mean, o.spread, o.seed};
  std::vector<Request> stream = MakeRequestStream(o.pool, static_cast<int>(docs->size()), ro);

  bool needs_store = false;
  for (const System& s : systems) needs_store |= s.reuse;
  if (needs_store && o.store.empty())
    return Fail(Status::Error("--store DIR is required for systems that reuse prefix KV"));

  std::vector<SystemRun> runs;
  for (const System& system : systems) {
    SystemRun run;
    run.system = system.name;
    // Each system starts with cold caches of its own policy over the same disk store.
    std::unique_ptr<PrefixStore> store;
    if (system.reuse) {
      PrefixStoreOptions so;
      so.dir = o.store;
      so.chunk_tokens = o.chunk;
      so.kv_dtype = o.kv_dtype;
      so.tiers.gpu_bytes = sizes[0];
      so.tiers.cpu_bytes = sizes[1];
      so.tiers.policy = o.policy_set ? o.policy : system.policy;
      so.tiers.h2d_bytes_per_second = static_cast<double>(sizes[3]);
      so.disk_bytes_per_second = static_cast<double>(sizes[2]);
      so.stored_copies = false;  // every system starts from the pool in token order
      run.policy = so.tiers.policy;
      auto ps = PrefixStore::Open(m, so);
      if (!ps.ok()) return Fail(ps.status());
      store = std::move(*ps);
      bool filled = false;
      Progress fill(std::string("fill store"), o.pool);  // the whole pool on disk before measuring
      for (int p = 0; p < o.pool; ++p) {
        if (store->tree().NewChunks(pool_ids[p]) > 0) {
          DenseKvCache full(m.config().num_layers);
          m.Forward(pool_ids[p], 0, full);
          auto added = store->Insert(pool_ids[p], full);
          if (!added.ok()) return Fail(added.status());
          filled = true;
        }
        fill.Update(p + 1);
      }
      if (filled) {  // start every system from the same state: everything on disk, caches cold
        store.reset();
        ps = PrefixStore::Open(m, so);
        if (!ps.ok()) return Fail(ps.status());
        store = std::move(*ps);
      }
    }
    // IMPRESS's reordering: one pass ends the warm-up (finished before
    // measuring); --reorder-every N adds passes beside the measured requests.
    std::unique_ptr<ReorderWorker> reorderer;
    if (system.reorder && store) reorderer = std::make_unique<ReorderWorker>(*store, ReorderWorkerOptions{});
    SelectionCounters selection(m.config().num_layers);
    double important_sum = 0;
    int64_t important_n = 0;
    Progress progress(std::string("run ") + run.system, static_cast<int64_t>(stream.size()));
    for (size_t i = 0; i < stream.size(); ++i) {
      const Request& r = stream[i];
      const Doc& doc = (*docs)[r.doc];
      auto ctx = TokenizeContext(**tok, (*pool)[r.prefix].text + doc.text);
      if (!ctx.ok()) return Fail(ctx.status());
      int64_t storable = 0;
      const auto& pid = pool_ids[r.prefix];
      while (storable < static_cast<int64_t>(std::min(pid.size(), ctx->ids.size())) && pid[storable] == ctx->ids[storable])
        ++storable;
      RequestTrace trace;
      std::unique_ptr<RewindableKv> kv;
      auto last = RunRequest(system, m, store.get(), ctx->ids, storable, &kv, &trace, RequestOptions{!o.no_prefetch});
      if (!last.ok()) return Fail(last.status());
      auto score = ScoreChoices(m, **tok, *ctx, *last, *kv, doc);
      if (!score.ok()) return Fail(score.status());
      progress.Update(static_cast<int64_t>(i) + 1);
      if (reorderer && static_cast<int>(i) + 1 == o.warmup) {
        reorderer->Trigger();
        reorderer->Drain();
      } else if (reorderer && o.reorder_every > 0 && (i + 1) % o.reorder_every == 0) {
        reorderer->Trigger();
      }
      if (static_cast<int>(i) < o.warmup) continue;
      run.ttft.push_back(trace.ttft_ms);
      run.per_request.push_back({{"prefix", r.prefix}, {"doc", r.doc}, {"ttft_ms", trace.ttft_ms},
                                 {"io_ms", trace.io_ms}, {"select_ms", trace.select_ms},
                                 {"reused_tokens", trace.reused_tokens}, {"disk_bytes", trace.load.bytes[2]},
                                 {"kv_chunks", trace.important_share_n}});
      run.io.push_back(trace.io_ms);
      run.select.push_back(trace.select_ms);
      for (int t = 0; t < 3; ++t) run.bytes[t] += trace.load.bytes[t];
      for (int t = 0; t < 2; ++t) run.hits[t] += trace.load.hits[t];
      run.chunk_loads += trace.load.chunks;
      run.disk_chunks += trace.load.disk_chunks;
      run.reused += trace.reused_tokens;
      run.computed += trace.computed_tokens;
      run.recomputed_after_error += trace.recomputed_after_error;
      run.correct += score->pred == doc.gold;
      run.n++;
      selection.Merge(trace.selection);
      important_sum += trace.important_share_sum;
      important_n += trace.important_share_n;
      run.selected_chunks += trace.important_share_n;
      for (int t = 0; t < 3; ++t) run.kv_tier[t] += trace.kv_chunk_tier[t];
      run.layer_kv_chunks.resize(m.config().num_layers, 0);
      for (size_t l = 0; l < trace.layer_kv_chunks.size(); ++l) run.layer_kv_chunks[l] += trace.layer_kv_chunks[l];
      run.prefix_chunks += trace.prefix_chunks;
    }
    if (reorderer) {
      reorderer->Drain();
      if (!reorderer->status().ok()) return Fail(reorderer->status());
      run.reorder = true;
      run.reorder_passes = reorderer->passes();
      run.reordered = reorderer->stats();
      run.footprint = store->Footprint();
      reorderer.reset();
    }
    run.fallback_share = selection.FallbackShare();
    run.kept_share = selection.KeptShare();
    run.important_share = important_n ? important_sum / important_n : 0;
    for (int l = 0; l < m.config().num_layers; ++l) {
      run.layer_kept.push_back(selection.total[l] ? double(selection.kept[l]) / selection.total[l] : 1.0);
      run.layer_load.push_back(run.prefix_chunks && l < static_cast<int>(run.layer_kv_chunks.size())
                                   ? double(run.layer_kv_chunks[l]) / run.prefix_chunks : 1.0);
      run.layer_fallback.push_back(selection.probes[l] ? double(selection.fallbacks[l]) / selection.probes[l] : 0.0);
    }
    runs.push_back(std::move(run));
  }

  const ModelConfig& c = m.config();
  std::printf("model %s, task %s, pool %d x %d tokens, %d requests (+%d warm-up), chunk %d, kv %s\n", o.model.c_str(),
              o.task.c_str(), o.pool, o.prefix_tokens, o.requests, o.warmup, o.chunk, o.kv_dtype.c_str());
  std::printf("caches: gpu %s (%s), cpu %s; disk cap %s, h2d cap %s; KV %lld bytes/token; retention %.3g, alpha %.3g\n\n",
              o.gpu_cache.c_str(), m.device().is_cuda() ? "CUDA" : "emulated in host memory", o.cpu_cache.c_str(),
              sizes[2] ? o.disk_bw.c_str() : "off", sizes[3] ? o.h2d_bw.c_str() : "off",
              static_cast<long long>(c.KvBytesPerToken(o.kv_dtype == "float32" ? 4 : 2)), o.retention, o.alpha);
  std::printf("| system | policy | ttft mean ms | p50 | p99 | io mean ms | io share | select ms | MB gpu | MB cpu | MB disk | hit gpu | hit cpu | chunks loaded | from disk | KV chunks/req | KV hit gpu | kept | fallback | acc |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::ordered_json j;
  j["config"] = {{"model", o.model}, {"task", o.task}, {"pool", o.pool}, {"prefix_tokens", o.prefix_tokens},
                 {"requests", o.requests}, {"warmup", o.warmup}, {"chunk", o.chunk}, {"kv_dtype", o.kv_dtype},
                 {"gpu_cache", sizes[0]}, {"cpu_cache", sizes[1]}, {"retention", o.retention}, {"alpha", o.alpha},
                 {"disk_bw", sizes[2]},
                 {"h2d_bw", sizes[3]}, {"seed", o.seed}, {"mean", o.mean}, {"spread", o.spread},
                 {"device", m.device().is_cuda() ? "cuda" : "cpu"}, {"prefetch", !o.no_prefetch}};
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) {
    const double ttft = Mean(r.ttft), io = Mean(r.io);
    const double share = ttft > 0 ? io / ttft : 0;
    const int64_t loads = r.chunk_loads;
    const double hit_gpu = loads ? double(r.hits[0]) / loads : 0, hit_cpu = loads ? double(r.hits[1]) / loads : 0;
    const double acc = r.n ? double(r.correct) / r.n : 0;
    // Selection reads K/V of chunks holding kept tokens; as reads every chunk.
    const double kv_chunks = r.n ? double(r.kept_share < 1.0 ? r.selected_chunks : r.chunk_loads) / r.n : 0;
    // GPU hits among the chunks whose K/V were read (every load for as).
    const int64_t kv_n = r.kv_tier[0] + r.kv_tier[1] + r.kv_tier[2];
    const double kv_hit_gpu = r.kept_share < 1.0 ? (kv_n ? double(r.kv_tier[0]) / kv_n : 0) : hit_gpu;
    std::printf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %lld | %lld | %.1f | %.2f | %.3f | %.3f | %.3f |\n",
                r.system.c_str(), r.policy.c_str(), ttft, Percentile(r.ttft, 50), Percentile(r.ttft, 99), io, share, Mean(r.select),
                r.bytes[0] / 1e6, r.bytes[1] / 1e6, r.bytes[2] / 1e6, hit_gpu, hit_cpu, static_cast<long long>(loads),
                static_cast<long long>(r.disk_chunks), kv_chunks, kv_hit_gpu, r.kept_share, r.fallback_share, acc);
    j["runs"].push_back({{"system", r.system}, {"requests", r.n},
                         {"ttft_ms", {{"mean", ttft}, {"p50", Percentile(r.ttft, 50)}, {"p99", Percentile(r.ttft, 99)}}},
                         {"io_ms", {{"mean", io}}}, {"io_share", share}, {"select_ms", {{"mean", Mean(r.select)}}},
                         {"bytes_read", {{"gpu", r.bytes[0]}, {"cpu", r.bytes[1]}, {"disk", r.bytes[2]}}},
                         {"hit_rate", {{"gpu", hit_gpu}, {"cpu", hit_cpu}}}, {"chunks_read", r.disk_chunks}, {"kv_chunks_per_request", kv_chunks}, {"kv_hit_gpu", kv_hit_gpu},
                         {"chunk_loads", loads}, {"reused_tokens", r.reused}, {"computed_tokens", r.computed},
                         {"recomputed_after_error", r.recomputed_after_error}, {"acc", acc},
                         {"policy", r.policy}, {"kept_share", r.kept_share}, {"fallback_share", r.fallback_share},
                         {"important_share_of_chunks_read", r.important_share}, {"layer_kept_share", r.layer_kept}, {"layer_kv_load_ratio", r.layer_load},
                         {"layer_fallback_share", r.layer_fallback}, {"per_request", r.per_request}});
    if (r.reorder) {
      const ReorderFootprint& f = r.footprint;
      j["runs"].back()["reorder"] = {{"every_requests", o.reorder_every}, {"passes", r.reorder_passes},
                                     {"nodes_reordered", r.reordered.nodes_reordered},
                                     {"chunks_written", r.reordered.chunks_written},
                                     {"mapping_bytes", f.mapping_bytes}, {"score_bytes", f.score_bytes},
                                     {"history_bytes", f.history_bytes},
                                     {"chunk_bytes", f.chunk_bytes}};
    }
  }
  // Reordering: what it rewrote, and its metadata against the chunks it describes.
  for (const auto& r : runs) {
    if (!r.reorder) continue;
    const ReorderFootprint& f = r.footprint;
    const double cb = f.chunk_bytes ? static_cast<double>(f.chunk_bytes) : 1.0;
    std::printf("\n%s reordering: %lld passes, %lld node copies installed, %lld (chunk, layer) pairs written; "
                "mapping lists %.3f%%, scores %.3f%% and importance history %.3f%% of chunk bytes\n",
                r.system.c_str(), static_cast<long long>(r.reorder_passes),
                static_cast<long long>(r.reordered.nodes_reordered), static_cast<long long>(r.reordered.chunks_written),
                100.0 * f.mapping_bytes / cb, 100.0 * f.score_bytes / cb, 100.0 * f.history_bytes / cb);
  }
  // Fig. 19: per layer, the share of the prefix's chunks whose K/V were loaded and of IMPRESS probe tests that fell back.
  for (const auto& r : runs) {
    if (r.kept_share >= 1.0) continue;
    std::printf("\n%s per layer (KV chunks loaded / fallback share):", r.system.c_str());
    for (size_t l = 0; l < r.layer_load.size(); ++l)
      std::printf("%s L%zu %.2f/%.2f", l % 6 == 0 ? "\n " : "", l, r.layer_load[l], r.layer_fallback[l]);
    std::printf("\n");
  }
  if (!o.json_path.empty()) {
    Status w = WriteTextFile(o.json_path, j.dump(2) + "\n");
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Request stream over a prefix pool: TTFT, I/O and accuracy per system");
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  cmd->add_option("--task", o->task, "piqa, rte, copa or openbookqa");
  cmd->add_option("--system", o->systems, std::string("comma-separated: ") + kSystemNames);
  cmd->add_option("--retention", o->retention, "share of prefix tokens kept (h2o, impress)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--alpha", o->alpha, "IMPRESS threshold exponent")->check(CLI::NonNegativeNumber);
  cmd->add_option("--pool", o->pool, "distinct prefixes")->check(CLI::PositiveNumber);
  cmd->add_option("--prefix-tokens", o->prefix_tokens, "target length of each prefix")->check(CLI::PositiveNumber);
  cmd->add_option("--requests", o->requests, "measured requests")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "requests run before measuring")->check(CLI::NonNegativeNumber);
  cmd->add_option("--gpu-cache", o->gpu_cache, "GPU cache bytes (K/M/G)");
  cmd->add_option("--cpu-cache", o->cpu_cache, "CPU cache bytes (K/M/G)");
  cmd->add_option("--store", o->store, "chunk store directory (kept across runs)");
  cmd->add_option("--disk-bw", o->disk_bw, "cap disk reads at this many bytes/s (0: none)");
  cmd->add_option("--h2d-bw", o->h2d_bw, "cap host-to-device copies at this many bytes/s (0: none)");
  cmd->add_option("--chunk", o->chunk, "tokens per chunk")->check(CLI::PositiveNumber);
  cmd->add_option("--policy", o->policy, "cache policy for every system (default: each system's own)")
      ->check(CLI::IsMember({"lru", "lfu", "score"}))
      ->each([o](const std::string&) { o->policy_set = true; });
  cmd->add_option("--kv-dtype", o->kv_dtype, "stored KV dtype")->check(CLI::IsMember({"float16", "bfloat16", "float32"}));
  cmd->add_option("--mean", o->mean, "centre of the prefix choice, fraction of the pool");
  cmd->add_option("--spread", o->spread, "standard deviation of the prefix choice, fraction of the pool");
  cmd->add_option("--seed", o->seed, "seed of the pool and the stream");
  cmd->add_option("--data", o->data, "folder with <task>/<split>.jsonl");
  cmd->add_flag("--no-prefetch", o->no_prefetch, "load each layer only when it is needed");
  cmd->add_option("--reorder-every", o->reorder_every,
                  "RO systems: besides the pass that ends the warm-up, reorder in the background after every N requests (0: never)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", o->json_path, "write the results as JSON");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunRun(*o); }});
}

}  // namespace impress
