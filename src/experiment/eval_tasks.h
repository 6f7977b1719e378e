// The accuracy experiment behind `impress eval`, the accuracy figures and the
// CI accuracy regression: lm-eval-style multiple-choice scoring behind a
// shared few-shot prefix, with a system's choice of prefix KV.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/retrieval.h"
#include "data/task.h"
#include "engine/systems.h"

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
  double retention = 1.0, alpha = 0.6;
  std::string itf_unit = "token";  // IMPRESS agreed set: "token" (the paper) or "chunk"
  std::string probe_layout = "first";  // IMPRESS probe heads: "first" (the paper) or "spread"
  int chunk = 64;                  // chunk size of the "chunk" unit (the prefix is cut as a store would)
  // The stored KV codec (fp16, int8, int4): the prefix's whole chunks are
  // encoded and decoded as a store with it serves them (codec/kv_codec_tensor.h).
  std::string kv_codec = "fp16";
  // The retrieval task (data/retrieval.h): its generator's needle density
  // and choices; the haystack size is prefix_tokens (2048 when 0), the seed
  // `seed`, and `limit` questions are scored (400 when 0), over as many
  // haystacks as that takes.
  RetrievalOptions retrieval;
  bool no_prefix = false;          // score every document with no prefix at all (the floor)
  // Each selecting system's recall of H2O's exact per-head top-k (Fig. 5):
  // "recall_h2o" in each result (Scorer::MeasureRecall).
  bool recall = false;
  // H2O's and the probe heads' importance over the last W question rows
  // (0: every row), max-pooled over P neighbouring positions (1: none).
  int64_t importance_window = 0, importance_pool = 1;
  std::ostream* samples = nullptr; // per-document records (JSONL) when set
  // Applied to every loaded document (shots and scored ones) before prompts
  // are built: lets a test alter what a template produced.
  std::function<void(Doc*)> edit_doc;
};

// Tasks: the four of data/task.h and "retrieval".
// {"system", "shots", "max_prefix_tokens", ..., "results": [{"task", "n",
// "shots", "acc", "acc_norm", "acc_stderr", "acc_norm_stderr",
// "gold_loglik_mean", "prefix_tokens", "kept_share", "fallback_share",
// "recall_h2o" (with `recall`, where a selection ran), "preds"}, ...]}, one
// result per task in order; "shots" per task is what the prefix holds;
// "preds" holds each document's predicted choice (acc's argmax).
// Errors name the split file or the document.
StatusOr<nlohmann::ordered_json> EvalTasks(Model& model, const Tokenizer& tok, const EvalConfig& config);

// The table `impress eval` prints for one EvalTasks result.
void PrintEvalReport(const nlohmann::ordered_json& result, std::FILE* out);

}  // namespace impress
