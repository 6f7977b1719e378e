#include "experiment/eval_tasks.h"

#include <cmath>

#include "common/progress.h"
#include "data/workload.h"
#include "engine/request.h"
#include "eval/scorer.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/selector.h"

namespace impress {
namespace {

// lm-eval's stderr of a mean: sample standard deviation / sqrt(n).
double MeanStderr(double p, int n) {
  if (n < 2) return 0;
  return std::sqrt(p * (1 - p) * n / (n - 1) / n);
}

StatusOr<std::vector<Doc>> LoadDocs(const EvalConfig& c, const TaskSpec& task, const char* split) {
  ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadSplit(task, SplitPath(c.data, task, split)));
  if (c.edit_doc)
    for (Doc& d : docs) c.edit_doc(&d);
  return docs;
}

// The most examples of the seeded sample whose prefix is at most `max_tokens`
// tokens (the sample of s examples is the first s of the sample of s + 1, and
// the count grows with s): doubling, then bisection.
StatusOr<int> ShotsThatFit(const std::vector<Doc>& train, const Tokenizer& tok, int64_t max_tokens, uint64_t seed) {
  auto fits = [&](int s) -> StatusOr<bool> {
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(BuildPrefix(SampleShots(train, s, seed)), false));
    return static_cast<int64_t>(ids.size()) <= max_tokens;
  };
  const int n = static_cast<int>(train.size());
  int lo = 0, hi = 1;  // lo fits; hi is the first candidate not known to fit
  while (hi <= n) {
    ASSIGN_OR_RETURN(bool ok, fits(hi));
    if (!ok) break;
    lo = hi;
    hi = std::min(2 * hi, n + 1);
    if (lo == n) return n;
  }
  hi = std::min(hi, n + 1);
  while (hi - lo > 1) {  // lo fits, hi does not (or is past the end)
    const int mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(bool ok, fits(mid));
    (ok ? lo : hi) = mid;
  }
  return lo;
}

StatusOr<nlohmann::ordered_json> EvalTask(const EvalConfig& c, const TaskSpec& task, const Tokenizer& tok,
                                          Scorer& scorer) {
  ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadDocs(c, task, task.eval_split));
  std::string prefix;
  int shots = c.shots;
  if (shots > 0 || c.prefix_tokens > 0) {
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadDocs(c, task, task.train_split));
    if (c.prefix_tokens > 0) {
      ASSIGN_OR_RETURN(shots, ShotsThatFit(train, tok, c.prefix_tokens, c.seed));
    } else if (shots > static_cast<int>(train.size())) {
      return Status::InvalidArgument("--shots " + std::to_string(shots) + " is more than the " +
                           std::to_string(train.size()) + " training documents of " + task.name);
    }
    prefix = BuildPrefix(SampleShots(train, shots, c.seed));
  }
  RETURN_IF_ERROR(scorer.SetPrefix(prefix));
  const int n = c.limit > 0 ? std::min<int>(c.limit, docs.size()) : static_cast<int>(docs.size());
  int correct = 0, correct_norm = 0;
  double gold_loglik = 0;
  std::vector<int> preds;
  Progress progress(std::string("eval ") + task.name, n);
  for (int i = 0; i < n; ++i) {
    auto s = scorer.Score(docs[i]);
    if (!s.ok()) return s.status().WithContext(std::string(task.name) + " document " + std::to_string(i));
    correct += s->pred == docs[i].gold;
    correct_norm += s->pred_norm == docs[i].gold;
    gold_loglik += s->loglik[docs[i].gold];
    preds.push_back(s->pred);
    if (c.samples != nullptr) {
      nlohmann::json j = {{"task", task.name}, {"doc", i}, {"context", prefix + docs[i].text},
                          {"choices", docs[i].choices}, {"gold", docs[i].gold}, {"loglik", s->loglik},
                          {"pred", s->pred}, {"pred_norm", s->pred_norm}};
      *c.samples << j.dump() << "\n";
    }
    progress.Update(i + 1);
  }
  const double acc = double(correct) / n, acc_norm = double(correct_norm) / n;
  return nlohmann::ordered_json{{"task", task.name}, {"n", n}, {"shots", shots}, {"acc", acc}, {"acc_norm", acc_norm},
                                {"acc_stderr", MeanStderr(acc, n)}, {"acc_norm_stderr", MeanStderr(acc_norm, n)},
                                {"gold_loglik_mean", gold_loglik / n}, {"prefix_tokens", scorer.prefix_tokens()},
                                {"kept_share", scorer.selection().KeptShare()},
                                {"fallback_share", scorer.selection().FallbackShare()}, {"preds", preds}};
}

}  // namespace

StatusOr<nlohmann::ordered_json> EvalTasks(Model& model, const Tokenizer& tok, const EvalConfig& c) {
  std::vector<const TaskSpec*> tasks;
  for (const std::string& name : c.tasks) {
    const TaskSpec* t = FindTask(name);
    if (t == nullptr) return Status::InvalidArgument("--task: unknown task '" + name + "' (piqa, rte, copa, openbookqa, all)");
    tasks.push_back(t);
  }
  // Reordering and cache policy change where KV lives, not which tokens are chosen.
  ASSIGN_OR_RETURN(const System system, ParseSystem(c.system, c.retention, c.alpha));
  SelectorOptions select = system.select;
  ASSIGN_OR_RETURN(select.unit, ParseItfUnit(c.itf_unit));
  select.chunk_tokens = c.chunk;
  ASSIGN_OR_RETURN(select.probe_layout, ParseProbeLayout(c.probe_layout));
  ASSIGN_OR_RETURN(const KvCodec codec, ParseKvCodec(c.kv_codec));
  Scorer scorer(model, tok, select, codec);
  nlohmann::ordered_json j = {{"system", c.system}, {"shots", c.shots}, {"max_prefix_tokens", c.prefix_tokens},
                              {"seed", c.seed}, {"limit", c.limit},
                              {"retention", c.retention}, {"alpha", c.alpha},
                              {"itf_unit", c.itf_unit}, {"chunk", c.chunk}, {"probe_layout", c.probe_layout}};
  if (codec != KvCodec::kNone) j["kv_codec"] = KvCodecName(codec);  // fp16 runs' JSON stays as it was
  j["results"] = nlohmann::json::array();
  for (const TaskSpec* t : tasks) {
    ASSIGN_OR_RETURN(nlohmann::ordered_json r, EvalTask(c, *t, tok, scorer));
    j["results"].push_back(std::move(r));
  }
  return j;
}

void PrintEvalReport(const nlohmann::ordered_json& j, std::FILE* out) {
  const int64_t max_prefix = j.value("max_prefix_tokens", int64_t{0});
  const std::string shots = max_prefix > 0 ? "shots up to " + std::to_string(max_prefix) + " prefix tokens"
                                           : std::to_string(j["shots"].get<int>()) + "-shot";
  std::fprintf(out, "model %s, system %s, %s, seed %llu, retention %.3g, alpha %.3g, ITF unit %s (chunk %d), probe heads %s\n\n",
               j.value("model", std::string("?")).c_str(), j["system"].get<std::string>().c_str(), shots.c_str(),
               j["seed"].get<unsigned long long>(), j["retention"].get<double>(), j["alpha"].get<double>(),
               j.value("itf_unit", std::string("token")).c_str(), j.value("chunk", 64),
               j.value("probe_layout", std::string("first")).c_str());
  std::fprintf(out, "| %-10s | %5s | %7s | %7s | %8s | %8s | %5s | %6s | %6s | %8s |\n", "task", "n", "acc", "acc_norm",
               "acc_se", "norm_se", "shots", "prefix", "kept", "fallback");
  std::fprintf(out, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------", "-------", "---------", "----------",
               "----------", "----------", "-------", "--------", "--------", "----------");
  for (const auto& r : j["results"])
    std::fprintf(out, "| %-10s | %5d | %7.4f | %8.4f | %8.4f | %8.4f | %5d | %6d | %6.3f | %8.3f |\n",
                 r["task"].get<std::string>().c_str(), r["n"].get<int>(), r["acc"].get<double>(),
                 r["acc_norm"].get<double>(), r["acc_stderr"].get<double>(), r["acc_norm_stderr"].get<double>(),
                 r.value("shots", j["shots"].get<int>()), r["prefix_tokens"].get<int>(), r["kept_share"].get<double>(),
                 r["fallback_share"].get<double>());
}

}  // namespace impress
