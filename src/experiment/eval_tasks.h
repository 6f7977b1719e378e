// The accuracy experiment behind `impress eval`, the accuracy figures and the
// CI accuracy regression: lm-eval-style multiple-choice scoring behind a
// shared few-shot prefix, with a system's choice of prefix KV.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/kv_codec.h"
#include "common/status.h"
#include "data/retrieval.h"
#include "data/task.h"
#include "request/systems.h"

namespace impress {

class Model;
class Tokenizer;

struct EvalConfig {
  std::vector<std::string> tasks = BenchmarkTaskNames();
  std::string data = "data";
  std::string system = system_name::kRecomp;   // which prefix KV documents attend to
  int shots = 0;                   // few-shot examples in the shared prefix
  // > 0: instead of `shots`, per task as many examples of the seeded sample
  // as fit in this many prefix tokens (the paper's prefixes are long).
  int64_t prefix_tokens = 0;
  int limit = 0;                   // the first N documents of each split (0: all)
  uint64_t seed = 1234;            // of the few-shot sample
  // The system's selection knobs (retention 1 unless set); its kind is the
  // system's, `chunk` and `seed` are this config's.
  SelectorOptions select;
  int chunk = 64;                  // chunk size of the "chunk" unit (the prefix is cut as a store would)
  // The stored KV codec (fp16, int8, int4): the prefix's whole chunks are
  // encoded and decoded as a store with it serves them (codec/kv_codec_tensor.h).
  std::string kv_codec = "fp16";
  // The retrieval task (data/retrieval.h): its generator's needle density
  // and choices; the haystack size is prefix_tokens (2048 when 0), the seed
  // `seed`, and `limit` questions are scored (400 when 0), over as many
  // haystacks as that takes.
  RetrievalOptions retrieval;
  // A task file (data/task_file.h): when set, its questions are scored
  // instead of `tasks`, each behind its own context (`limit`: the first N).
  std::string task_file;
  bool no_prefix = false;          // score every document with no prefix at all (the floor)
  // Each selecting system's recall of H2O's exact per-head top-k (Fig. 5):
  // "recall_h2o" in each result (Scorer::MeasureRecall).
  bool recall = false;
  std::ostream* samples = nullptr; // per-document records (JSONL) when set
  // Applied to every loaded document (shots and scored ones) before prompts
  // are built: lets a test alter what a template produced.
  std::function<void(Doc*)> edit_doc;
};

// One task's accuracy behind its prefix.
struct TaskEval {
  std::string task;
  int n = 0;                    // documents (questions) scored
  int shots = 0;                // examples the prefix holds (0 for retrieval)
  double acc = 0, acc_norm = 0, acc_stderr = 0, acc_norm_stderr = 0;
  double gold_loglik_mean = 0;
  int64_t prefix_tokens = 0;    // retrieval: the mean over its haystacks
  double kept_share = 0, fallback_share = 0;
  std::optional<double> recall_h2o;  // with EvalConfig::recall, where a selection ran
  std::vector<int> preds;       // each document's predicted choice (acc's argmax)
  // The retrieval task's: how many haystacks, and its generator's settings.
  struct Haystacks {
    int64_t count = 0;
    RetrievalOptions generator;
  };
  std::optional<Haystacks> haystacks;
  // A task file's generation lines, scored as RULER scores: how many, the
  // share whose output holds every answer (RULER's `all`), and the mean
  // share of answers found. acc and the rest are over its other lines
  // (multiple choice, n - generated->n of them; 0 when none).
  struct Generated {
    int n = 0;
    double all = 0, answers_found = 0;
  };
  std::optional<Generated> generated;

  // {"task", "n", "shots", "acc", "acc_norm", "acc_stderr", "acc_norm_stderr",
  // "gold_loglik_mean", "prefix_tokens", "kept_share", "fallback_share",
  // "recall_h2o" (when set), "preds", for retrieval "haystacks", "generator",
  // and for a task file with generation lines "generation": {"n", "all", "answers_found"}}.
  nlohmann::ordered_json ToJson() const;
};

// What EvalTasks measured, with the settings that name it.
struct EvalResult {
  EvalConfig config;            // as given (samples and edit_doc are not written)
  KvCodec codec = KvCodec::kNone;
  std::vector<TaskEval> results;  // one per task, in order
  std::string model;            // the caller's name for the model ("" : not written)

  // {"system", "shots", "max_prefix_tokens", "seed", "limit", "retention",
  // "alpha", "itf_unit", "chunk", "probe_layout", "kv_codec" (not fp16),
  // "importance_window" and "importance_pool" (not exact), "results",
  // "model" (when set)}.
  nlohmann::ordered_json ToJson() const;
  // The table `impress eval` prints.
  void Print(std::FILE* out) const;
};

// Tasks: the four of data/task.h and "retrieval", or a task file. Errors
// name the split file or the document (a task file: its path and line).
StatusOr<EvalResult> EvalTasks(Model& model, const Tokenizer& tok, const EvalConfig& config);

// The retrieval task's questions as EvalTasks scores them: `limit` questions
// (400 when 0) over as many haystacks of prefix_tokens tokens (2048 when 0)
// as that takes, from `data`'s PIQA training split and `seed`.
StatusOr<std::vector<TaskContext>> RetrievalContexts(const EvalConfig& config, const Tokenizer& tok);

}  // namespace impress
