// impress run: a request stream over a prefix pool through one or more
// systems; TTFT, I/O and accuracy per system. --itf-unit, --alpha,
// --retention, --chunk and --pool take comma-separated lists and run their
// cross product.
#include <iostream>

#include "cli/commands.h"
#include "cli/provenance.h"
#include "codec/kv_codec.h"
#include "common/named.h"
#include "common/units.h"
#include "data/task.h"
#include "data/task_file.h"
#include "request/request.h"
#include "kvstore/store_identity.h"
#include "experiment/run_systems.h"
#include "experiment/sweep.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/probe_heads.h"
#include "select/selector.h"

namespace impress {
namespace {

struct RunOptions {
  std::string model, systems = "recomp,as";
  RunConfig config;
  TierFlags tiers = TierFlags::Of(config.cache_bytes, config.disk_bw, config.h2d_bw);
  SweepAxes axes;
  bool no_prefetch = false;
  std::string json_path;
  bool brief = false;
  std::string remote_bw = BytesText(static_cast<int64_t>(config.remote_bw));
  RuntimeFlags runtime;
};

int RunRun(RunOptions o) {
  if (o.model.empty()) return Fail(Status::InvalidArgument("--model is required"));
  ApplyRuntimeFlags(o.runtime);
  RunConfig& c = o.config;
  c.systems = SplitList(o.systems);
  c.prefetch = !o.no_prefetch;
  for (const std::string& name : c.systems) {
    auto s = ParseSystem(name, 1.0, 0.0);
    if (!s.ok()) return Fail(s.status());
  }
  Status parsed = o.tiers.Parse(&c.cache_bytes, &c.disk_bw, &c.h2d_bw);
  if (!parsed.ok()) return Fail(parsed);
  auto remote_bw = ParseBytes(o.remote_bw);
  if (!remote_bw.ok()) return Fail(remote_bw.status().WithContext("--remote-bw"));
  c.remote_bw = static_cast<double>(*remote_bw);
  if (!c.task_file.empty()) {  // its contexts are the pool; a bad line is refused before anything runs
    StatusOr<std::vector<TaskContext>> file = LoadTaskFile(c.task_file);
    if (!file.ok()) return Fail(file.status());
    c.task = TaskFileName(c.task_file);
    c.prefix_tokens = 0;
    o.axes.pool = {static_cast<int>(file->size())};
  }
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());

  std::vector<nlohmann::ordered_json> results;
  RunMemo memo;  // a system runs once for the axes it does not depend on
  const std::string store = c.store;
  for (const SweepPoint& p : SweepPoints(o.axes)) {
    p.ApplyTo(&c.select);
    c.chunk = p.chunk;
    c.pool = p.pool;
    // A store holds one chunk size: a chunk sweep keeps one folder per size.
    if (!store.empty() && o.axes.chunk.size() > 1) c.store = store + "/chunk" + std::to_string(p.chunk);
    auto r = RunSystems(**model, **tok, c, &memo);
    if (!r.ok()) return Fail(r.status());
    r->model = o.model;
    if (!results.empty()) std::printf("\n");
    (o.brief ? PrintRunHeadline : PrintRunReport)(*r, stdout);
    std::fflush(stdout);
    results.push_back(r->ToJson());
  }
  if (!o.json_path.empty()) {
    const bool cuda = (*model)->device().is_cuda();
    Status w = WriteTextFile(o.json_path, WithProvenance(SweepResult(std::move(results)), o.model, cuda).dump(2) + "\n");
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

// --no-prefetch and a flag per speculation mode (SpeculationModes), each
// excluding the others; --read-ahead, excluding --no-prefetch.
void AddReadAheadFlags(CLI::App* cmd, RunOptions* o) {
  std::vector<CLI::Option*> taken = {
      cmd->add_flag("--no-prefetch", o->no_prefetch, "load each layer only when it is needed")};
  cmd->add_option("--read-ahead", o->config.read_ahead,
                  "layers ahead that reads start: 1 (the paper's pipeline) reads layer l+1 while layer l computes; N "
                  "starts layers l+1 .. l+N (speculative guesses from the last layer's set)")
      ->check(CLI::Range(1, 8))
      ->excludes(taken.front());
  for (const SpeculationMode& m : SpeculationModes()) {
    if (m.flag == nullptr) continue;
    CLI::Option* flag = cmd->add_flag_callback(m.flag, [c = &o->config, mode = m.mode] { c->speculate = mode; }, m.help);
    for (CLI::Option* other : taken) flag->excludes(other);
    taken.push_back(flag);
  }
}

}  // namespace

void AddRunCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<RunOptions>();
  RunConfig* c = &o->config;
  CLI::App* cmd = app.add_subcommand("run", "Request stream over a prefix pool: TTFT, I/O and accuracy per system");
  cmd->option_defaults()->always_capture_default();  // --help shows each default
  cmd->add_option("--model", o->model, "Hugging Face model directory (required)");
  CLI::Option* task = cmd->add_option("--task", c->task, JoinNames(TaskNames()));
  CLI::Option* task_file =
      cmd->add_option("--task-file", c->task_file,
                      "instead of --task: a JSONL file of your own questions (docs/data.md); its distinct contexts "
                      "are the prefix pool and requests ask each context's questions in turn")
          ->excludes(task);
  cmd->add_option("--needles-per-1k", c->retrieval.needles_per_1k, "retrieval: needles per 1,000 haystack tokens")
      ->excludes(task_file);
  cmd->add_option("--system", o->systems, "comma-separated: " + JoinNames(SystemNames()));
  AddSelectionFlags(cmd, &c->select, &o->axes);
  cmd->add_option("--chunk", o->axes.chunk, "tokens per chunk; a list sweeps (one store folder per size)")
      ->delimiter(',')->check(PositiveNumber());
  cmd->add_option("--pool", o->axes.pool, "distinct prefixes; a list sweeps")
      ->delimiter(',')
      ->check(PositiveNumber())
      ->excludes(task_file);
  cmd->add_option("--prefix-tokens", c->prefix_tokens, "target length of each prefix")
      ->check(PositiveNumber())
      ->excludes(task_file);
  cmd->add_option("--requests", c->requests, "measured requests")->check(PositiveNumber());
  cmd->add_option("--warmup", c->warmup, "requests run before measuring")->check(NonNegativeNumber());
  o->tiers.Add(cmd);
  cmd->add_option("--store", c->store, "chunk store directory (kept across runs)");
  cmd->add_option("--remote", c->remote,
                  "redis://HOST:PORT[,HOST:PORT...]: a Redis Cluster as a shared tier below the disk (docs/remote.md)");
  cmd->add_option("--remote-bw", o->remote_bw, "cap remote-tier reads at this many bytes/s (0: none)");
  cmd->add_option("--policy", c->policy, "cache policy for every system (default: each system's own)")
      ->check(CLI::IsMember(PolicyNames()));
  cmd->add_option("--kv-dtype", c->kv_dtype, "stored KV dtype")->check(CLI::IsMember(KvDtypeNames()));
  cmd->add_option("--kv-codec", c->kv_codec,
                  "how the disk stores chunk parts (fp16: as they are; docs/store.md); a store keeps the "
                  "codec it was made with")
      ->check(CLI::IsMember(KvCodecNames()));
  cmd->add_option("--mean", c->mean, "centre of the prefix choice, fraction of the pool");
  cmd->add_option("--spread", c->spread, "standard deviation of the prefix choice, fraction of the pool");
  cmd->add_option("--seed", c->seed, "seed of the pool and the stream");
  cmd->add_option("--data", c->data, "folder with <task>/<split>.jsonl");
  AddReadAheadFlags(cmd, o.get());
  cmd->add_option("--reorder-every", c->reorder_every,
                  "RO systems: besides the pass that ends the warm-up, reorder in the background after every N requests (0: never)")
      ->check(NonNegativeNumber());
  cmd->add_flag("--brief", o->brief,
                "print the headline only: TTFT mean and p99, the speedup over h2o-lfu, disk bytes and accuracy "
                "(--json keeps everything)");
  cmd->add_option("--json", o->json_path, "write the results as JSON ({\"sweep\": [...]} when a list sweeps)");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunRun(*o); }});
}

}  // namespace impress
