// The accuracy regression check: a small fixed evaluation (each task's first
// documents, fixed few-shot seed, a few systems) whose numbers are committed
// in an expected file; a run that moves any number beyond the file's stated
// tolerance fails.
//
// Expected file (JSON):
//   {"config": {"tasks": [...], "systems": [...], "shots", "limit", "seed",
//               "retention", "alpha", optionally "kv_codec" (fp16, int8, int4),
//               optionally "retrieval": {"systems": [...], "prefix_tokens",
//               "limit"}: the retrieval task (data/retrieval.h) for these
//               systems, `limit` questions over haystacks of `prefix_tokens`,
//               at the config's seed, retention and alpha},
//    "tolerance": {"acc": A, "acc_norm": A, "gold_loglik_mean": L},
//    "command": how the file was written,
//    "results": [{"task", "system", "n", "acc", "acc_norm", "gold_loglik_mean"}, ...]}
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/task.h"

namespace impress {

class Model;
class Tokenizer;

// The configuration and tolerances a new expected file starts from.
nlohmann::ordered_json DefaultRegressionSpec();

// Checks the shape of an expected file before anything is evaluated: the
// config's fields and types, tolerances that are numbers, and (unless
// `results_optional`, as for --update) result rows that are objects with a
// string task and system and numeric metrics. The error names the first
// field that is wrong.
Status ValidateRegressionSpec(const nlohmann::ordered_json& spec, bool results_optional);

// Which of an expected file's rows a run evaluates, and with what.
struct RegressionSelection {
  std::vector<std::string> tasks, systems;  // only rows of these (empty: every row)
  // spec system -> the system that runs in its place; rows keep the spec's
  // name, so a run shows what the committed numbers say of another selection
  // (`regress --substitute impress=random`: a broken selection must fail).
  std::map<std::string, std::string> substitute;
  bool everything() const { return tasks.empty() && systems.empty() && substitute.empty(); }
};

// Evaluates every (system, task) of spec["config"] that `selection` keeps and
// returns the "results" rows. `edit_doc`, when set, alters every document
// first (tests).
StatusOr<nlohmann::ordered_json> RunRegression(Model& model, const Tokenizer& tok, const nlohmann::ordered_json& spec,
                                               const std::string& data_dir, const RegressionSelection& selection = {},
                                               const std::function<void(Doc*)>& edit_doc = {});

// OK when every row of `actual` has an expected row of the same task and
// system whose numbers are within spec["tolerance"], and (require_all) every
// expected row was checked. Otherwise the error lists each number that moved:
// "piqa/recomp gold_loglik_mean -0.7912, expected -0.8101 (tolerance 0.002)".
Status CompareRegression(const nlohmann::ordered_json& spec, const nlohmann::ordered_json& actual, bool require_all);

}  // namespace impress
