#include "experiment/regression.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "experiment/eval_tasks.h"

namespace impress {

nlohmann::ordered_json DefaultRegressionSpec() {
  nlohmann::ordered_json spec;
  spec["config"] = {{"tasks", BenchmarkTaskNames()}, {"systems", std::vector<std::string>{system_name::kRecomp, system_name::kImpress}},
                    {"shots", 5}, {"limit", 20}, {"seed", 1234}, {"retention", 0.25}, {"alpha", 0.6}};
  // Where the prefix decides the answer: 1K-token haystacks, 40 questions
  // (results/retrieval/README.md: full KV 0.925, h2o-lru 0.575, impress 0.35,
  // random 0.20 on these), so a selection that keeps the wrong tokens moves acc
  // by several questions.
  spec["config"]["retrieval"] = {
      {"systems", std::vector<std::string>{system_name::kRecomp, system_name::kH2oLru, system_name::kImpress,
                                           system_name::kDigest}},
      {"prefix_tokens", 1024},
      {"limit", 40}};
  // acc moves in steps of 1/limit: one document may flip on another CPU's
  // rounding, two may not. The gold log-likelihood (a sum over the choice's
  // tokens) moves ~1e-4 with thread count and BLAS; a one-character prompt
  // change moves it by far more than 1e-2.
  spec["tolerance"] = {{"acc", 0.051}, {"acc_norm", 0.051}, {"gold_loglik_mean", 0.01}};
  return spec;
}

Status ValidateRegressionSpec(const nlohmann::ordered_json& spec, bool results_optional) {
  using json = nlohmann::ordered_json;
  if (!spec.is_object()) return Status::InvalidArgument("not a JSON object");
  if (!spec.contains("config") || !spec["config"].is_object()) return Status::InvalidArgument("no \"config\" object");
  const json& c = spec["config"];
  for (const char* key : {"tasks", "systems"}) {
    if (!c.contains(key) || !c[key].is_array() || c[key].empty())
      return Status::InvalidArgument(std::string("config.") + key + " is not a list of names");
    for (const json& v : c[key])
      if (!v.is_string()) return Status::InvalidArgument(std::string("config.") + key + " holds " + v.dump() + ", not a name");
  }
  for (const char* key : {"shots", "limit", "seed"})
    if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() < 0 ||
        c[key].get<int64_t>() > (int64_t{1} << 31))  // a parsed file's are unsigned, DefaultRegressionSpec's signed
      return Status::InvalidArgument(std::string("config.") + key + " is not a non-negative integer");
  for (const char* key : {"retention", "alpha"})
    if (!c.contains(key) || !c[key].is_number()) return Status::InvalidArgument(std::string("config.") + key + " is not a number");
  if (c.contains("retrieval")) {
    const json& r = c["retrieval"];
    if (!r.is_object()) return Status::InvalidArgument("config.retrieval is not an object");
    if (!r.contains("systems") || !r["systems"].is_array() || r["systems"].empty())
      return Status::InvalidArgument("config.retrieval.systems is not a list of names");
    for (const json& v : r["systems"])
      if (!v.is_string()) return Status::InvalidArgument("config.retrieval.systems holds " + v.dump() + ", not a name");
    for (const char* key : {"prefix_tokens", "limit"})
      if (!r.contains(key) || !r[key].is_number_integer() || r[key].get<int64_t>() <= 0 ||
          r[key].get<int64_t>() > (int64_t{1} << 31))
        return Status::InvalidArgument(std::string("config.retrieval.") + key + " is not a positive integer");
  }
  if (!spec.contains("tolerance") || !spec["tolerance"].is_object()) return Status::InvalidArgument("no \"tolerance\" object");
  for (const auto& [metric, tol] : spec["tolerance"].items())
    if (!tol.is_number() || tol.get<double>() < 0) return Status::InvalidArgument("tolerance." + metric + " is not a non-negative number");
  if (!spec.contains("results") && results_optional) return Status::OK();
  if (!spec.contains("results") || !spec["results"].is_array()) return Status::InvalidArgument("no \"results\" array");
  for (const json& row : spec["results"]) {
    if (!row.is_object() || !row.contains("task") || !row["task"].is_string() || !row.contains("system") ||
        !row["system"].is_string())
      return Status::InvalidArgument("results holds " + row.dump().substr(0, 60) + ", not a row with a task and a system");
    for (const auto& [metric, tol] : spec["tolerance"].items())
      if (row.contains(metric) && !row[metric].is_number())
        return Status::InvalidArgument("results " + row["task"].get<std::string>() + "/" + row["system"].get<std::string>() + " " +
                             metric + " is not a number");
  }
  return Status::OK();
}

namespace {

bool Keeps(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

}  // namespace

StatusOr<nlohmann::ordered_json> RunRegression(Model& model, const Tokenizer& tok, const nlohmann::ordered_json& spec,
                                               const std::string& data_dir, const RegressionSelection& selection,
                                               const std::function<void(Doc*)>& edit_doc) {
  if (!spec.contains("config") || !spec["config"].is_object()) return Status::InvalidArgument("no \"config\" object");
  const auto& c = spec["config"];
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  // One evaluation of `system` (the spec's name) over `tasks`, its rows appended.
  auto evaluate = [&](const std::string& system, std::vector<std::string> tasks, EvalConfig e) -> Status {
    tasks.erase(std::remove_if(tasks.begin(), tasks.end(), [&](const std::string& t) { return !Keeps(selection.tasks, t); }),
                tasks.end());
    if (tasks.empty() || !Keeps(selection.systems, system)) return Status::OK();
    auto sub = selection.substitute.find(system);
    e.tasks = std::move(tasks);
    e.data = data_dir;
    e.system = sub == selection.substitute.end() ? system : sub->second;
    e.seed = c.at("seed").get<uint64_t>();
    e.select.retention = c.at("retention").get<double>();
    e.select.alpha = c.at("alpha").get<double>();
    e.kv_codec = c.value("kv_codec", std::string("fp16"));
    e.edit_doc = edit_doc;
    ASSIGN_OR_RETURN(const EvalResult r, EvalTasks(model, tok, e));
    for (const TaskEval& t : r.results)
      rows.push_back({{"task", t.task}, {"system", system}, {"n", t.n}, {"acc", t.acc}, {"acc_norm", t.acc_norm},
                      {"gold_loglik_mean", t.gold_loglik_mean}});
    return Status::OK();
  };
  try {
    for (const std::string system : c.at("systems")) {
      EvalConfig e;
      e.shots = c.at("shots").get<int>();
      e.limit = c.at("limit").get<int>();
      RETURN_IF_ERROR(evaluate(system, c.at("tasks").get<std::vector<std::string>>(), e));
    }
    if (c.contains("retrieval")) {
      const auto& r = c["retrieval"];
      for (const std::string system : r.at("systems")) {
        EvalConfig e;
        e.prefix_tokens = r.at("prefix_tokens").get<int64_t>();
        e.limit = r.at("limit").get<int>();
        RETURN_IF_ERROR(evaluate(system, {kRetrievalTask}, e));
      }
    }
  } catch (const nlohmann::json::exception& ex) {
    return Status::InvalidArgument(std::string("bad \"config\": ") + ex.what());
  }
  return rows;
}

Status CompareRegression(const nlohmann::ordered_json& spec, const nlohmann::ordered_json& actual, bool require_all) {
  RETURN_IF_ERROR(ValidateRegressionSpec(spec, /*results_optional=*/false));
  std::map<std::string, const nlohmann::ordered_json*> expected;
  for (const auto& row : spec["results"])
    expected[row.value("task", std::string()) + "/" + row.value("system", std::string())] = &row;
  std::string moved;
  size_t checked = 0;
  for (const auto& row : actual) {
    const std::string key = row["task"].get<std::string>() + "/" + row["system"].get<std::string>();
    auto it = expected.find(key);
    if (it == expected.end()) {
      moved += "\n  " + key + ": no expected row";
      continue;
    }
    ++checked;
    for (const auto& [metric, tol] : spec["tolerance"].items()) {
      if (!it->second->contains(metric) || !row.contains(metric)) {
        moved += "\n  " + key + " " + metric + ": missing";
        continue;
      }
      const double want = (*it->second)[metric].get<double>(), got = row[metric].get<double>();
      if (std::fabs(got - want) <= tol.get<double>()) continue;
      char buf[256];
      std::snprintf(buf, sizeof buf, "\n  %s %s %.6g, expected %.6g (tolerance %g)", key.c_str(), metric.c_str(), got,
                    want, tol.get<double>());
      moved += buf;
    }
  }
  if (require_all && checked < expected.size())
    moved += "\n  " + std::to_string(expected.size() - checked) + " expected rows were not run";
  if (!moved.empty()) return Status::InvalidArgument("accuracy moved beyond tolerance:" + moved);
  return Status::OK();
}

}  // namespace impress
