// The accuracy figures: Fig. 15 (accuracy vs retention) and the paper's Fig. 5 (spi).
#include "experiment/figures.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "common/named.h"
#include "data/task.h"
#include "data/workload.h"
#include "request/systems.h"
#include "experiment/figure_util.h"
#include "experiment/head_analysis.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/importance.h"

namespace impress {
using namespace system_name;  // the systems the figures pick, by their registry names
using namespace figure_util;

StatusOr<Figure> FigureRunner::Fig15() {
  Figure f;
  f.name = "fig15";
  f.title = "Accuracy vs retention";
  f.paper = "IMPRESS within 1 point of AS+H2O+LRU everywhere, 0.2 points on average";
  f.columns = {{"task", "task"}, {"retention", "retention"}, {"acc_recomp", kRecomp}, {"acc_h2o_lru", kH2oLru}, {"acc_impress_itf", kImpressItf}, {"itf_minus_h2o_points", "impress-itf minus h2o-lru (points)"}, {"h2o_lru_agrees", "h2o-lru agrees with recomp"}, {"impress_itf_agrees", "impress-itf agrees with recomp"}};
  const EvalConfig base = BaseEval(scale_.tasks);
  ASSIGN_OR_RETURN(const EvalResult recomp, Eval(models_[0], base));
  double diff_sum = 0;
  int cells = 0;
  for (double r : scale_.retentions) {
    EvalConfig h = base, i = base;
    h.system = kH2oLru;
    i.system = kImpressItf;
    h.select.retention = i.select.retention = r;
    ASSIGN_OR_RETURN(const EvalResult hr, Eval(models_[0], h));
    ASSIGN_OR_RETURN(const EvalResult ir, Eval(models_[0], i));
    for (size_t t = 0; t < scale_.tasks.size(); ++t) {
      const double a = recomp.results[t].acc, b = hr.results[t].acc, c = ir.results[t].acc;
      const std::vector<int>& full = recomp.results[t].preds;
      f.rows.push_back({scale_.tasks[t], r, a, b, c, 100 * (c - b), Agreement(hr.results[t].preds, full),
                        Agreement(ir.results[t].preds, full)});
      diff_sum += 100 * (c - b);
      ++cells;
    }
  }
  f.notes.push_back("mean impress-itf minus h2o-lru: " + std::to_string(cells ? diff_sum / cells : 0).substr(0, 6) +
                    " points over " + std::to_string(cells) + " cells; " + std::to_string(scale_.docs) +
                    " documents per task (0: all), " +
                    (scale_.eval_prefix_tokens > 0
                         ? "few-shot examples up to " + std::to_string(scale_.eval_prefix_tokens) + " prefix tokens"
                         : std::to_string(scale_.shots) + "-shot"));
  f.notes.push_back("agrees with recomp: the share of documents on which the system predicts the choice that the "
                    "full prefix KV predicts, right or wrong");
  return f;
}

StatusOr<Figure> FigureRunner::Spi() {
  Figure f;
  f.name = "spi";
  f.title = "Recall of H2O's exact per-head top-k, and accuracy, vs retention (Fig. 5)";
  f.paper = "a static, query-independent choice (SPI) misses the tokens a query needs and loses accuracy";
  f.columns = {{"task", "task"}, {"retention", "retention"}, {"system", "system"},
               {"recall", "recall of H2O's top-k"}, {"acc", "acc"}, {"acc_recomp", "recomp acc"},
               {"kept_share", "kept share"}};
  // (system, ITF unit) pairs; `impress` selects as `impress-itf` does (reordering
  // and caching move KV, not the choice), so it is not a row of its own.
  const std::vector<std::pair<std::string, ItfUnit>> systems = {{kStatic, ItfUnit::kToken},
                                                                {kRandom, ItfUnit::kToken},
                                                                {kH2oLru, ItfUnit::kToken},
                                                                {kImpressItf, ItfUnit::kToken},
                                                                {kImpressItf, ItfUnit::kChunk}};
  // Per task; retrieval always, at its own scale, whether --tasks names it or not.
  std::vector<std::pair<std::string, EvalConfig>> bases;
  for (const std::string& t : scale_.tasks)
    if (t != kRetrievalTask) bases.emplace_back(t, BaseEval({t}));
  EvalConfig retrieval = BaseEval({kRetrievalTask});
  retrieval.shots = 0;
  retrieval.prefix_tokens = scale_.retrieval_tokens;
  retrieval.limit = scale_.retrieval_questions;
  retrieval.chunk = 64;  // haystacks are cut as a store cuts them
  bases.emplace_back(kRetrievalTask, retrieval);
  for (const auto& [task, base] : bases) {
    ASSIGN_OR_RETURN(const EvalResult full, Eval(models_[0], base));
    const double acc_full = full.results[0].acc;
    for (double r : scale_.retentions) {
      for (const auto& [system, unit] : systems) {
        EvalConfig e = base;
        e.system = system;
        e.select.unit = unit;
        e.select.retention = r;
        e.recall = true;
        ASSIGN_OR_RETURN(const EvalResult got, Eval(models_[0], e));
        const TaskEval& res = got.results[0];
        f.rows.push_back({task, r, system + (system == kImpressItf ? " (" + NameOf(ItfUnitNames(), unit) + ")" : ""),
                          res.recall_h2o.value_or(0.0), res.acc, acc_full, res.kept_share});
      }
    }
  }
  f.notes.push_back("recall: per layer and query head, the share of H2O's exact top-k (the request's question rows "
                    "over every prefix key, k = retention x prefix tokens) that the system keeps, averaged over "
                    "heads, layers and documents; h2o-lru is 1 by construction, random about the retention");
  f.notes.push_back("impress-itf (chunk) keeps whole chunks, more than k tokens (kept share), so its recall is not "
                    "that of a k-token set; impress selects as impress-itf");
  f.notes.push_back("retrieval: " + std::to_string(scale_.retrieval_questions) + " questions over " +
                    std::to_string(scale_.retrieval_tokens) + "-token haystacks; the four tasks: " +
                    std::to_string(scale_.docs) + " documents each (0: all)");
  return f;
}

}  // namespace impress
