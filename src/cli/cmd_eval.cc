// impress eval: lm-eval-style multiple-choice accuracy behind a shared
// few-shot prefix, or a task file's questions behind their contexts.
// --itf-unit, --retention and --alpha take comma-separated lists.
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/provenance.h"
#include "codec/kv_codec.h"
#include "data/task.h"
#include "data/task_file.h"
#include "request/request.h"
#include "experiment/eval_tasks.h"
#include "experiment/sweep.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/probe_heads.h"

namespace impress {
namespace {

struct EvalOptions {
  std::string model;
  std::string task = "all";
  EvalConfig config;
  SweepAxes axes;
  std::string json_path;
  std::string samples_path;
  std::string write_task_file;
  RuntimeFlags runtime;
};

// --write-task-file: the retrieval task's questions, as eval would score
// them, written as a task file instead of scored.
int WriteRetrievalTaskFile(const EvalOptions& o) {
  if (o.task != kRetrievalTask) return Fail(Status::InvalidArgument("--write-task-file writes --task retrieval only"));
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto contexts = RetrievalContexts(o.config, **tok);
  if (!contexts.ok()) return Fail(contexts.status());
  Status w = WriteTextFile(o.write_task_file, TaskFileText(*contexts));
  if (!w.ok()) return Fail(w);
  size_t n = 0;
  for (const TaskContext& x : *contexts) n += x.lines.size();
  std::printf("wrote %zu retrieval questions over %zu haystacks to %s\n", n, contexts->size(), o.write_task_file.c_str());
  return 0;
}

int RunEval(EvalOptions o) {
  ApplyRuntimeFlags(o.runtime);
  if (!o.write_task_file.empty()) return WriteRetrievalTaskFile(o);
  EvalConfig& c = o.config;
  c.tasks.clear();
  if (!c.task_file.empty()) {  // its questions instead; a bad line is refused before anything runs
    StatusOr<std::vector<TaskContext>> file = LoadTaskFile(c.task_file);
    if (!file.ok()) return Fail(file.status());
  } else if (o.task == "all") {
    c.tasks = BenchmarkTaskNames();
  } else {
    Status known = CheckTaskName(o.task, true);
    if (!known.ok()) return Fail(known);
    c.tasks.push_back(o.task);
  }
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());
  std::ostringstream samples;  // written at the end: a failed eval writes nothing
  if (!o.samples_path.empty()) c.samples = &samples;
  std::vector<nlohmann::ordered_json> results;
  for (const SweepPoint& p : SweepPoints(o.axes)) {
    p.ApplyTo(&c.select);
    auto r = EvalTasks(**model, **tok, c);
    if (!r.ok()) return Fail(r.status().WithContext("--system " + c.system));
    r->model = o.model;
    if (!results.empty()) std::printf("\n");
    r->Print(stdout);
    std::fflush(stdout);
    results.push_back(r->ToJson());
  }
  if (!o.json_path.empty()) {
    const bool cuda = (*model)->device().is_cuda();
    Status w = WriteTextFile(o.json_path, WithProvenance(SweepResult(std::move(results)), o.model, cuda).dump(2) + "\n");
    if (!w.ok()) return Fail(w);
  }
  if (!o.samples_path.empty()) {
    Status w = WriteTextFile(o.samples_path, samples.str());
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

}  // namespace

void AddEvalCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<EvalOptions>();
  o->axes.retention = {1.0};
  EvalConfig* c = &o->config;
  CLI::App* cmd = app.add_subcommand("eval", "Multiple-choice accuracy as lm-evaluation-harness computes it");
  cmd->option_defaults()->always_capture_default();  // --help shows each default
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  CLI::Option* task = cmd->add_option("--task", o->task, "piqa, rte, copa, openbookqa, retrieval, or all (the first four)");
  cmd->add_option("--task-file", c->task_file,
                  "instead of --task: a JSONL file of your own questions (context, question, and choices with gold "
                  "or answers; docs/data.md)")
      ->excludes(task);
  cmd->add_option("--write-task-file", o->write_task_file,
                  "with --task retrieval: write its questions (the flags' haystacks, --limit of them) as a task file "
                  "instead of scoring them")
      ->excludes("--task-file");
  cmd->add_option("--needles-per-1k", c->retrieval.needles_per_1k, "retrieval: needles per 1,000 haystack tokens");
  cmd->add_flag("--no-prefix", c->no_prefix, "score every document with no prefix (the floor)");
  cmd->add_flag("--recall", c->recall,
                "also score each layer selection against H2O's exact per-head top-k from the same question rows "
                "(the paper's Fig. 5 recall: recall_h2o in --json)");
  CLI::Option* shots = cmd->add_option("--shots", c->shots, "few-shot examples in the prefix shared by every document")
                           ->check(NonNegativeNumber());
  cmd->add_option("--prefix-tokens", c->prefix_tokens,
                  "instead of --shots: per task, as many few-shot examples as fit in this many prefix tokens (0: off); retrieval: the haystack size (0: 2048)")
      ->check(NonNegativeNumber())
      ->excludes(shots);
  cmd->add_option("--limit", c->limit, "score the first N documents of each split (0: all; retrieval: N questions, 0: 400)")
      ->check(NonNegativeNumber());
  cmd->add_option("--system", c->system, "recomp, as, h2o-lru, h2o-lfu or impress-itf: which prefix KV documents attend to "
                                         "(impress-itf-ro and impress choose as impress-itf does)")
      ->check(CLI::IsMember(SystemNames()));
  AddSelectionFlags(cmd, &c->select, &o->axes);
  cmd->add_option("--chunk", c->chunk, "tokens per chunk the chunk ITF unit selects (the prefix cut as a store cuts it)")
      ->check(PositiveNumber());
  cmd->add_option("--kv-codec", c->kv_codec,
                  "the prefix's whole chunks as a store with this codec serves them (fp16: as computed)")
      ->check(CLI::IsMember(KvCodecNames()));
  cmd->add_option("--seed", c->seed, "seed of the few-shot sample");
  cmd->add_option("--data", c->data, "folder with <task>/<split>.jsonl (make data)");
  cmd->add_option("--json", o->json_path, "write the results as JSON ({\"sweep\": [...]} when a list sweeps)");
  cmd->add_option("--samples", o->samples_path, "write per-document contexts, log-likelihoods and predictions (JSONL)");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunEval(*o); }});
}

}  // namespace impress
