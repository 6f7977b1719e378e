// The accuracy regression check: a small fixed evaluation (each task's first
// documents, fixed few-shot seed, a few systems) whose numbers are committed
// in an expected file; a run that moves any number beyond the file's stated
// tolerance fails.
//
// Expected file (JSON):
//   {"config": {"tasks": [...], "systems": [...], "shots", "limit", "seed",
//               "retention", "alpha", optionally "kv_codec" (fp16, int8, int4)},
//    "tolerance": {"acc": A, "acc_norm": A, "gold_loglik_mean": L},
//    "command": how the file was written,
//    "results": [{"task", "system", "n", "acc", "acc_norm", "gold_loglik_mean"}, ...]}
#pragma once

#include <functional>
#include <string>

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

// Evaluates every (system, task) of spec["config"] and returns the
// "results" rows. `edit_doc`, when set, alters every document first (tests).
StatusOr<nlohmann::ordered_json> RunRegression(Model& model, const Tokenizer& tok, const nlohmann::ordered_json& spec,
                                               const std::string& data_dir,
                                               const std::function<void(Doc*)>& edit_doc = {});

// OK when every row of `actual` has an expected row of the same task and
// system whose numbers are within spec["tolerance"], and (require_all) every
// expected row was checked. Otherwise the error lists each number that moved:
// "piqa/recomp gold_loglik_mean -0.7912, expected -0.8101 (tolerance 0.002)".
Status CompareRegression(const nlohmann::ordered_json& spec, const nlohmann::ordered_json& actual, bool require_all);

}  // namespace impress
