#include "experiment/eval_tasks.h"

#include <cmath>

#include "common/named.h"
#include "common/progress.h"
#include "data/retrieval.h"
#include "data/task_file.h"
#include "data/workload.h"
#include "request/request.h"
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

// Scores documents behind the scorer's prefix and keeps the counts.
struct Tally {
  int n = 0, correct = 0, correct_norm = 0;
  double gold_loglik = 0;
  std::vector<int> preds;

  Status Score(const EvalConfig& c, const std::string& task, const std::string& prefix, const Doc& doc,
               Scorer& scorer) {
    auto s = scorer.Score(doc);
    if (!s.ok()) return s.status().WithContext(task + " document " + std::to_string(n));
    correct += s->pred == doc.gold;
    correct_norm += s->pred_norm == doc.gold;
    gold_loglik += s->loglik[doc.gold];
    preds.push_back(s->pred);
    if (c.samples != nullptr) {
      nlohmann::json j = {{"task", task}, {"doc", n}, {"context", prefix + doc.text},
                          {"choices", doc.choices}, {"gold", doc.gold}, {"loglik", s->loglik},
                          {"pred", s->pred}, {"pred_norm", s->pred_norm}};
      *c.samples << j.dump() << "\n";
    }
    ++n;
    return Status::OK();
  }

  // `selection`: the scorer's counters over every prefix the documents had.
  TaskEval Result(const std::string& task, int shots, int64_t prefix_tokens, const SelectionCounters& selection) const {
    TaskEval r;
    r.task = task, r.n = n, r.shots = shots;
    if (n > 0) {
      r.acc = double(correct) / n, r.acc_norm = double(correct_norm) / n;
      r.acc_stderr = MeanStderr(r.acc, n), r.acc_norm_stderr = MeanStderr(r.acc_norm, n);
      r.gold_loglik_mean = gold_loglik / n;
    }
    r.prefix_tokens = prefix_tokens;
    r.kept_share = selection.KeptShare(), r.fallback_share = selection.FallbackShare();
    if (selection.recall_n > 0) r.recall_h2o = selection.Recall();
    r.preds = preds;
    return r;
  }
};

StatusOr<TaskEval> EvalTask(const EvalConfig& c, const TaskSpec& task, const Tokenizer& tok, Scorer& scorer) {
  ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadDocs(c, task, task.eval_split));
  std::string prefix;
  int shots = c.shots;
  if (c.no_prefix) {
    shots = 0;
  } else if (shots > 0 || c.prefix_tokens > 0) {
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
  Tally t;
  Progress progress(std::string("eval ") + task.name, n);
  for (int i = 0; i < n; ++i) {
    RETURN_IF_ERROR(t.Score(c, task.name, prefix, docs[i], scorer));
    progress.Update(i + 1);
  }
  return t.Result(task.name, shots, scorer.prefix_tokens(), scorer.selection());
}

// Long-context questions: each context is the prefix of its own lines;
// multiple-choice lines are tallied as documents, generation lines decoded
// and scored. `source` names the file the lines come from in errors (empty: none).
StatusOr<TaskEval> EvalContexts(const EvalConfig& c, const std::string& task, const std::vector<TaskContext>& contexts,
                                const std::string& source, Scorer& scorer) {
  int total = 0;
  for (const TaskContext& x : contexts) total += static_cast<int>(x.lines.size());
  const int want = c.limit > 0 ? std::min(c.limit, total) : total;
  const auto where = [&](int line) { return source.empty() ? std::string() : source + ":" + std::to_string(line); };
  const auto in = [&](Status s, int line) { return source.empty() ? s : s.WithContext(where(line)); };
  Tally t;
  TaskEval::Generated gen;
  int64_t tokens = 0, used = 0;
  SelectionCounters selection;  // over every context (SetPrefix starts the scorer's own again)
  Progress progress("eval " + task, want);
  for (const TaskContext& x : contexts) {
    if (t.n + gen.n == want) break;
    const std::string prefix = c.no_prefix ? "" : x.text;
    RETURN_IF_ERROR(in(scorer.SetPrefix(prefix), x.lines[0].line));
    tokens += scorer.prefix_tokens(), ++used;
    for (const TaskLine& l : x.lines) {
      if (t.n + gen.n == want) break;
      if (!l.generates()) {
        RETURN_IF_ERROR(in(t.Score(c, task, prefix, l.doc, scorer), l.line));
      } else {
        StatusOr<Generation> g = scorer.Generate(l.doc, l.max_new_tokens);
        if (!g.ok()) return in(g.status(), l.line);
        const double share = AnswerShare(l.answers, g->text);
        gen.all += share == 1.0, gen.answers_found += share;
        if (c.samples != nullptr) {
          nlohmann::json j = {{"task", task}, {"line", l.line}, {"context", prefix + l.doc.text},
                              {"answers", l.answers}, {"output", g->text}, {"output_ids", g->ids},
                              {"all", share == 1.0}, {"answers_found", share}};
          *c.samples << j.dump() << "\n";
        }
        ++gen.n;
      }
      progress.Update(t.n + gen.n);
    }
    if (used == 1) selection = scorer.selection();
    else selection.Merge(scorer.selection());
  }
  TaskEval r = t.Result(task, 0, tokens / std::max<int64_t>(used, 1), selection);
  r.n = t.n + gen.n;
  if (gen.n > 0) {
    gen.all /= gen.n, gen.answers_found /= gen.n;
    r.generated = gen;
  }
  return r;
}

RetrievalOptions RetrievalGenerator(const EvalConfig& c) {
  RetrievalOptions ro = c.retrieval;
  ro.haystack_tokens = c.prefix_tokens > 0 ? c.prefix_tokens : 2048;
  ro.seed = c.seed;
  return ro;
}

// The retrieval task: its haystacks as contexts (data/retrieval.h), as many as `limit` questions need.
StatusOr<TaskEval> EvalRetrieval(const EvalConfig& c, const Tokenizer& tok, Scorer& scorer) {
  ASSIGN_OR_RETURN(std::vector<TaskContext> contexts, RetrievalContexts(c, tok));  // exactly the questions to score
  const int64_t count = static_cast<int64_t>(contexts.size());
  ASSIGN_OR_RETURN(TaskEval r, EvalContexts(c, kRetrievalTask, contexts, "", scorer));
  r.haystacks = TaskEval::Haystacks{count, RetrievalGenerator(c)};
  return r;
}

// A task file's questions behind their contexts.
StatusOr<TaskEval> EvalTaskFile(const EvalConfig& c, Scorer& scorer) {
  ASSIGN_OR_RETURN(std::vector<TaskContext> contexts, LoadTaskFile(c.task_file));
  return EvalContexts(c, TaskFileName(c.task_file), contexts, c.task_file, scorer);
}

}  // namespace

StatusOr<std::vector<TaskContext>> RetrievalContexts(const EvalConfig& c, const Tokenizer& tok) {
  const TaskSpec& piqa = *FindTask("piqa");
  ASSIGN_OR_RETURN(std::vector<Doc> train, LoadDocs(c, piqa, piqa.train_split));
  const RetrievalOptions ro = RetrievalGenerator(c);
  const int per = NeedlesPerHaystack(ro), want = c.limit > 0 ? c.limit : 400;
  ASSIGN_OR_RETURN(std::vector<Haystack> hays, MakeHaystacks(RetrievalFiller(train), tok, ro, (want + per - 1) / per));
  std::vector<TaskContext> contexts = HaystackContexts(std::move(hays));
  contexts.back().lines.resize(want - (static_cast<int>(contexts.size()) - 1) * per);  // the last haystack's share
  return contexts;
}

StatusOr<EvalResult> EvalTasks(Model& model, const Tokenizer& tok, const EvalConfig& c) {
  std::vector<const TaskSpec*> tasks;
  for (const std::string& name : c.tasks) {
    RETURN_IF_ERROR(CheckTaskName(name, true));
    tasks.push_back(FindTask(name));
  }
  // Reordering and cache policy change where KV lives, not which tokens are chosen.
  ASSIGN_OR_RETURN(const System system, ParseSystem(c.system, c.select));
  SelectorOptions select = system.select;
  select.chunk_tokens = c.chunk;
  select.seed = c.seed;
  EvalResult out;
  out.config = c;
  ASSIGN_OR_RETURN(out.codec, ParseKvCodec(c.kv_codec));
  Scorer scorer(model, tok, select, out.codec);
  scorer.MeasureRecall(c.recall);
  if (!c.task_file.empty()) {
    ASSIGN_OR_RETURN(TaskEval r, EvalTaskFile(c, scorer));
    out.results.push_back(std::move(r));
    return out;
  }
  for (const TaskSpec* t : tasks) {
    ASSIGN_OR_RETURN(TaskEval r, t->choice() ? EvalTask(c, *t, tok, scorer) : EvalRetrieval(c, tok, scorer));
    out.results.push_back(std::move(r));
  }
  return out;
}

nlohmann::ordered_json TaskEval::ToJson() const {
  nlohmann::ordered_json r{{"task", task}, {"n", n}, {"shots", shots}, {"acc", acc}, {"acc_norm", acc_norm},
                           {"acc_stderr", acc_stderr}, {"acc_norm_stderr", acc_norm_stderr},
                           {"gold_loglik_mean", gold_loglik_mean}, {"prefix_tokens", prefix_tokens},
                           {"kept_share", kept_share}, {"fallback_share", fallback_share}};
  if (recall_h2o) r["recall_h2o"] = *recall_h2o;
  r["preds"] = preds;
  if (haystacks) {
    const RetrievalOptions& ro = haystacks->generator;
    r["haystacks"] = haystacks->count;
    r["generator"] = {{"haystack_tokens", ro.haystack_tokens}, {"needles_per_haystack", NeedlesPerHaystack(ro)},
                      {"needles_per_1k", ro.needles_per_1k}, {"choices", ro.choices}, {"seed", ro.seed},
                      {"filler", "data/piqa/train.jsonl solutions (RetrievalFiller)"}};
  }
  if (generated)
    r["generation"] = {{"n", generated->n}, {"all", generated->all}, {"answers_found", generated->answers_found}};
  return r;
}

nlohmann::ordered_json EvalResult::ToJson() const {
  const EvalConfig& c = config;
  nlohmann::ordered_json j = {{"system", c.system}, {"shots", c.shots}, {"max_prefix_tokens", c.prefix_tokens},
                              {"seed", c.seed}, {"limit", c.limit},
                              {"retention", c.select.retention}, {"alpha", c.select.alpha},
                              {"itf_unit", NameOf(ItfUnitNames(), c.select.unit)}, {"chunk", c.chunk},
                              {"probe_layout", NameOf(ProbeLayoutNames(), c.select.probe_layout)}};
  if (codec != KvCodec::kNone) j["kv_codec"] = KvCodecName(codec);  // fp16 runs' JSON stays as it was
  AddImportanceJson(c.select.importance, &j);
  if (AnyReadsDigests({c.system})) j["digest"] = DigestJson(c.select.digest);
  if (!c.task_file.empty()) j["task_file"] = c.task_file;
  j["results"] = nlohmann::json::array();
  for (const TaskEval& r : results) j["results"].push_back(r.ToJson());
  if (!model.empty()) j["model"] = model;
  return j;
}

void EvalResult::Print(std::FILE* out) const {
  const EvalConfig& c = config;
  const std::string shots = c.prefix_tokens > 0 ? "shots up to " + std::to_string(c.prefix_tokens) + " prefix tokens"
                                                : std::to_string(c.shots) + "-shot";
  std::fprintf(out, "model %s, system %s, %s, seed %llu, retention %.3g, alpha %.3g, ITF unit %s (chunk %d), probe heads %s\n\n",
               model.empty() ? "?" : model.c_str(), c.system.c_str(), shots.c_str(),
               static_cast<unsigned long long>(c.seed), c.select.retention, c.select.alpha,
               NameOf(ItfUnitNames(), c.select.unit).c_str(), c.chunk,
               NameOf(ProbeLayoutNames(), c.select.probe_layout).c_str());
  std::fprintf(out, "| %-10s | %5s | %7s | %7s | %8s | %8s | %5s | %6s | %6s | %8s |\n", "task", "n", "acc", "acc_norm",
               "acc_se", "norm_se", "shots", "prefix", "kept", "fallback");
  std::fprintf(out, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------", "-------", "---------", "----------",
               "----------", "----------", "-------", "--------", "--------", "----------");
  for (const TaskEval& r : results)
    std::fprintf(out, "| %-10s | %5d | %7.4f | %8.4f | %8.4f | %8.4f | %5d | %6d | %6.3f | %8.3f |\n",
                 r.task.c_str(), r.n, r.acc, r.acc_norm, r.acc_stderr, r.acc_norm_stderr, r.shots,
                 static_cast<int>(r.prefix_tokens), r.kept_share, r.fallback_share);
  for (const TaskEval& r : results)
    if (r.generated)
      std::fprintf(out, "\n%s: %d generated answers (acc above: the other %d lines); every answer found %.4f, "
                   "answers found %.4f (RULER's string_match_all)\n",
                   r.task.c_str(), r.generated->n, r.n - r.generated->n, r.generated->all, r.generated->answers_found);
}

}  // namespace impress
