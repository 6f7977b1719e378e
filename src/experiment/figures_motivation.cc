// The motivation figures: head Jaccard, similarity ratio, chunk importance.
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

namespace {

// Observation 1: per layer, the mean pairwise Jaccard of heads' important sets.
void HeadJaccard(const HeadAnalysis& a, const HeadAnalysisOptions& o, Figure* f) {
  f->title = "Jaccard index between heads' important-token sets, per layer (observation 1)";
  f->paper = "heads of a layer agree on important tokens far more than random sets do";
  f->columns = {{"layer", "layer"}, {"jaccard_all_heads", "mean pairwise Jaccard (all heads)"}, {"jaccard_probe_heads", "probe heads"}, {"jaccard_random", "random sets"}};
  const int h = a.heads, probes = o.probe_heads;
  const int64_t n = a.prefix_tokens;
  const double kn = double(RetainedTokens(o.retention, n)) / n;
  const double rnd = kn / (2 - kn);
  for (int l = 0; l < a.layers; ++l) {
    const std::vector<double>& m2 = a.jaccard[l];
    double all = 0, probe = 0;
    int np = 0;
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < h; ++j) {
        if (i == j) continue;
        all += m2[i * h + j];
        if (i < probes && j < probes) {
          probe += m2[i * h + j];
          ++np;
        }
      }
    f->rows.push_back({l, all / (h * (h - 1)), np ? probe / np : 1.0, rnd});
  }
  f->series = {{"heads", h}, {"retention", o.retention}, {"jaccard", a.jaccard}};
}

// Observation 2: head similarity against the selection ratio, beside random sets and the threshold.
void SimilarityRatio(const HeadAnalysis& a, const HeadAnalysisOptions& o, Figure* f) {
  f->title = "Head similarity vs selection ratio (observation 2)";
  f->paper = "similarity rises with the selection ratio, as does the random baseline; the threshold tracks it";
  f->columns = {{"selection_ratio", "selection ratio"}, {"jaccard_all_heads", "all heads"}, {"jaccard_probe_heads", "probe heads"}, {"jaccard_random", "random sets"}, {"jaccard_threshold", "threshold (alpha 0.6)"}};
  for (size_t i = 0; i < o.retentions.size(); ++i) {
    const double rnd = a.random[i];
    f->rows.push_back({o.retentions[i], a.all_heads[i], a.probe_heads[i], rnd, std::pow(rnd, 0.6)});
  }
}

// The important share of each chunk read: the histogram and the read amplification.
void ChunkImportance(const HeadAnalysis& a, const HeadAnalysisOptions& o, Figure* f) {
  f->title = "Important share of each chunk read (read amplification)";
  f->paper = "46% of the KV in chunks read is important (2.2x read amplification)";
  f->columns = {{"important_share", "important share of the chunk"}, {"chunks", "chunks"}, {"fraction_read", "fraction of chunks read"}};
  const double n = static_cast<double>(a.chunks_read);
  for (int i = 0; i < 10; ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "(%.1f, %.1f]", i / 10.0, (i + 1) / 10.0);
    const int64_t c = a.histogram[i];
    f->rows.push_back({label, c, n > 0 ? c / n : 0});
  }
  const double mean = a.important_share_mean;
  f->notes.push_back("mean important share " + std::to_string(mean).substr(0, 5) + " => read amplification " +
                    std::to_string(mean > 0 ? 1 / mean : 0).substr(0, 4) + "x at retention " +
                    std::to_string(o.retention).substr(0, 4) + ", " + std::to_string(o.chunk_tokens) +
                    "-token chunks");
  f->series = {{"important_share_mean", mean}, {"histogram", a.histogram}};
}

// The options the figures analyse heads with: the scale's TTFT retention.
HeadAnalysisOptions FigureAnalysisOptions(const std::string& task) {
  HeadAnalysisOptions o;
  o.retention = TtftRetention(task);
  return o;
}

}  // namespace

// The head analysis of the scale's task on the first model, memoized.
StatusOr<const HeadAnalysis*> FigureRunner::MemoHeadAnalysis() {
  const FigureModel& m = models_[0];
  const std::string key = m.dir + " " + scale_.task;
  if (!analyses_.count(key)) {
    const TaskSpec* task = FindTask(scale_.task);
    if (task == nullptr) return Status::InvalidArgument("--task: unknown task '" + scale_.task + "'");
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(*task, SplitPath(data_, *task, task->train_split)));
    ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadSplit(*task, SplitPath(data_, *task, task->eval_split)));
    PrefixPoolOptions po{1, scale_.prefix_tokens, scale_.seed};
    ASSIGN_OR_RETURN(std::vector<PooledPrefix> pool, BuildPrefixPool(train, *m.tok, po));
    docs.resize(std::min<size_t>(docs.size(), scale_.analysis_docs));
    Announce("head analysis " + scale_.task);
    ASSIGN_OR_RETURN(HeadAnalysis a,
                     AnalyzeHeads(*m.model, *m.tok, pool[0].text, docs, FigureAnalysisOptions(scale_.task)));
    analyses_[key] = std::move(a);
  }
  return &analyses_[key];
}

StatusOr<Figure> FigureRunner::Motivation(const std::string& name) {
  ASSIGN_OR_RETURN(const HeadAnalysis* analysis, MemoHeadAnalysis());
  const HeadAnalysis& a = *analysis;
  const HeadAnalysisOptions o = FigureAnalysisOptions(scale_.task);
  Figure f;
  f.name = name;
  const std::string scope = "task " + scale_.task + ", one " + std::to_string(a.prefix_tokens) + "-token prefix, " +
                            std::to_string(a.docs) + " documents";
  f.notes.push_back(scope);
  if (name == "head-jaccard") HeadJaccard(a, o, &f);
  else if (name == "similarity-ratio") SimilarityRatio(a, o, &f);
  else ChunkImportance(a, o, &f);
  return f;
}

}  // namespace impress
