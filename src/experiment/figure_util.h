// Helpers the figure files share (experiment/figures*.cc); internal to them.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/eval_tasks.h"
#include "experiment/run_config.h"

namespace impress::figure_util {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The paper's TTFT retention: 50% for COPA, 25% for the others.
inline double TtftRetention(const std::string& task) { return task == "copa" ? 0.5 : 0.25; }

inline double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

// The mean accuracy over an eval's tasks.
inline double MeanAcc(const EvalResult& eval) {
  double sum = 0;
  for (const TaskEval& r : eval.results) sum += r.acc;
  return eval.results.empty() ? 0 : sum / static_cast<double>(eval.results.size());
}

// Share of documents on which two evals' "preds" (same documents) name the same choice.
inline double Agreement(const std::vector<int>& preds, const std::vector<int>& reference) {
  size_t same = 0;
  for (size_t i = 0; i < preds.size() && i < reference.size(); ++i) same += preds[i] == reference[i];
  return reference.empty() ? 0 : double(same) / reference.size();
}

inline std::string Base(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().filename().string();
  return s.empty() ? std::filesystem::path(dir).lexically_normal().parent_path().filename().string() : s;
}

// What identifies a run: the model and every field of its config.
inline ojson Key(const std::string& model, const RunConfig& c) {
  ojson k = c.ToJson();
  k["model"] = model;
  return k;
}

// Names the experiment about to run on stderr (they take minutes).
inline void Announce(const std::string& what) { std::fprintf(stderr, "reproduce: %s\n", what.c_str()); }

}  // namespace impress::figure_util
