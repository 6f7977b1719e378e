// impress eval: lm-eval-style multiple-choice accuracy behind a shared
// few-shot prefix.
#include <cmath>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/progress.h"
#include "data/task.h"
#include "data/workload.h"
#include "eval/scorer.h"
#include "select/selector.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct EvalOptions {
  std::string model;
  std::string task = "all";
  std::string data = "data";
  std::string system = "recomp";
  int shots = 0;
  int limit = 0;  // 0: the whole split
  uint64_t seed = 1234;
  double retention = 1.0;
  double alpha = 0.6;
  std::string json_path;
  std::string samples_path;
  RuntimeFlags runtime;
};

struct TaskResult {
  std::string task;
  int n = 0;
  double acc = 0, acc_norm = 0, acc_stderr = 0, acc_norm_stderr = 0;
  int prefix_tokens = 0;
  double fallback_share = 0, kept_share = 1;
};

// lm-eval's stderr of a mean: sample standard deviation / sqrt(n).
double MeanStderr(double p, int n) {
  if (n < 2) return 0;
  return std::sqrt(p * (1 - p) * n / (n - 1) / n);
}

StatusOr<TaskResult> EvalTask(const EvalOptions& o, const TaskSpec& task, Scorer& scorer, std::ostream* samples) {
  ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadSplit(task, SplitPath(o.data, task, task.eval_split)));
  std::string prefix;
  if (o.shots > 0) {
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(task, SplitPath(o.data, task, task.train_split)));
    if (o.shots > static_cast<int>(train.size()))
      return Status::Error("--shots " + std::to_string(o.shots) + " is more than the " +
                           std::to_string(train.size()) + " training documents of " + task.name);
    prefix = BuildPrefix(SampleShots(train, o.shots, o.seed));
  }
  RETURN_IF_ERROR(scorer.SetPrefix(prefix));
  const int n = o.limit > 0 ? std::min<int>(o.limit, docs.size()) : static_cast<int>(docs.size());
  TaskResult r;
  r.task = task.name;
  r.n = n;
  r.prefix_tokens = static_cast<int>(scorer.prefix_tokens());
  int correct = 0, correct_norm = 0;
  Progress progress(std::string("eval ") + task.name, n);
  for (int i = 0; i < n; ++i) {
    auto s = scorer.Score(docs[i]);
    if (!s.ok()) return s.status().WithContext(std::string(task.name) + " document " + std::to_string(i));
    correct += s->pred == docs[i].gold;
    correct_norm += s->pred_norm == docs[i].gold;
    if (samples != nullptr) {
      nlohmann::json j = {{"task", task.name}, {"doc", i}, {"context", prefix + docs[i].text},
                          {"choices", docs[i].choices}, {"gold", docs[i].gold}, {"loglik", s->loglik},
                          {"pred", s->pred}, {"pred_norm", s->pred_norm}};
      *samples << j.dump() << "\n";
    }
    progress.Update(i + 1);
  }
  r.fallback_share = scorer.selection().FallbackShare();
  r.kept_share = scorer.selection().KeptShare();
  r.acc = static_cast<double>(correct) / n;
  r.acc_norm = static_cast<double>(correct_norm) / n;
  r.acc_stderr = MeanStderr(r.acc, n);
  r.acc_norm_stderr = MeanStderr(r.acc_norm, n);
  return r;
}

int RunEval(const EvalOptions& o) {
  ApplyRuntimeFlags(o.runtime);
  std::vector<const TaskSpec*> tasks;
  if (o.task == "all") {
    for (const auto& t : Tasks()) tasks.push_back(&t);
  } else if (const TaskSpec* t = FindTask(o.task)) {
    tasks.push_back(t);
  } else {
    return Fail(Status::Error("--task: unknown task '" + o.task + "' (piqa, rte, copa, openbookqa, all)"));
  }
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());
  std::ofstream samples;
  if (!o.samples_path.empty()) {
    samples.open(o.samples_path);
    if (!samples) return Fail(Status::Error(o.samples_path + ": cannot write"));
  }
  auto kind = SelectorForSystem(o.system);
  if (!kind.ok()) return Fail(kind.status().WithContext("--system"));
  SelectorOptions select;
  select.kind = *kind;
  select.retention = o.retention;
  select.alpha = o.alpha;
  Scorer scorer(**model, **tok, select);
  std::vector<TaskResult> results;
  for (const TaskSpec* t : tasks) {
    auto r = EvalTask(o, *t, scorer, samples.is_open() ? &samples : nullptr);
    if (!r.ok()) return Fail(r.status());
    results.push_back(*r);
  }

  std::printf("model %s, system %s, %d-shot, seed %llu, retention %.3g, alpha %.3g\n\n", o.model.c_str(),
              o.system.c_str(), o.shots, static_cast<unsigned long long>(o.seed), o.retention, o.alpha);
  std::printf("| %-10s | %5s | %7s | %7s | %8s | %8s | %6s | %6s | %8s |\n", "task", "n", "acc", "acc_norm", "acc_se",
              "norm_se", "prefix", "kept", "fallback");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------", "-------", "---------", "----------", "----------",
              "----------", "--------", "--------", "----------");
  nlohmann::ordered_json j = {{"model", o.model}, {"system", o.system}, {"shots", o.shots}, {"seed", o.seed},
                              {"limit", o.limit}, {"retention", o.retention}, {"alpha", o.alpha}};
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) {
    std::printf("| %-10s | %5d | %7.4f | %8.4f | %8.4f | %8.4f | %6d | %6.3f | %8.3f |\n", r.task.c_str(), r.n, r.acc,
                r.acc_norm, r.acc_stderr, r.acc_norm_stderr, r.prefix_tokens, r.kept_share, r.fallback_share);
    j["results"].push_back({{"task", r.task}, {"n", r.n}, {"acc", r.acc}, {"acc_norm", r.acc_norm},
                            {"acc_stderr", r.acc_stderr}, {"acc_norm_stderr", r.acc_norm_stderr},
                            {"prefix_tokens", r.prefix_tokens}, {"kept_share", r.kept_share},
                            {"fallback_share", r.fallback_share}});
  }
  if (!o.json_path.empty()) {
    Status w = WriteTextFile(o.json_path, j.dump(2) + "\n");
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

}  // namespace

void AddEvalCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Multiple-choice accuracy as lm-evaluation-harness computes it");
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  cmd->add_option("--task", o->task, "piqa, rte, copa, openbookqa, or all");
  cmd->add_option("--shots", o->shots, "few-shot examples in the prefix shared by every document")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--limit", o->limit, "score the first N documents of each split (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--system", o->system, "recomp, as, h2o-lru, h2o-lfu or impress-itf: which prefix KV documents attend to "
                                         "(impress-itf-ro and impress choose as impress-itf does)")
      ->check(CLI::IsMember({"recomp", "as", "h2o-lru", "h2o-lfu", "impress-itf", "impress-itf-ro", "impress"}));
  cmd->add_option("--retention", o->retention, "share of prefix tokens each head keeps (h2o, impress)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--alpha", o->alpha, "IMPRESS threshold exponent: t = ((k/n)/(2-k/n))^alpha")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", o->seed, "seed of the few-shot sample");
  cmd->add_option("--data", o->data, "folder with <task>/<split>.jsonl (make data)");
  cmd->add_option("--json", o->json_path, "write the results as JSON");
  cmd->add_option("--samples", o->samples_path, "write per-document contexts, log-likelihoods and predictions (JSONL)");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunEval(*o); }});
}

}  // namespace impress
