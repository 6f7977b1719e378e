// The paper's figures as experiments: each driver runs what its figure
// measures (through RunSystems, EvalTasks or AnalyzeHeads) at a scale the
// caller sets, and returns a table plus the series a plot needs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "experiment/eval_tasks.h"
#include "experiment/head_analysis.h"
#include "experiment/run_systems.h"
#include "experiment/run_result.h"

namespace impress {

class Model;
class Tokenizer;

// How big the experiments are. The defaults finish each figure in minutes on
// two CPU cores with SmolLM2-135M; the paper's scale is in the comments.
struct FigureScale {
  std::vector<std::string> tasks = BenchmarkTaskNames();  // multi-task figures
  std::string task = "piqa";        // single-task figures (paper: RTE, COPA, OpenBookQA)
  int pool = 8;                     // prefixes (paper: tens of GB of prefix KV)
  int prefix_tokens = 1024;         // per prefix (paper: 4.8K-5.7K on average)
  int requests = 16, warmup = 8;    // measured and warm-up requests per system
  TierCounts cache_bytes = TierCountsOf({{Tier::kGpu, 16 << 20}, {Tier::kCpu, 32 << 20}});  // paper: 10 GB, 32 GB
  double disk_bw = 128.0 * (1 << 20), h2d_bw = 640.0 * (1 << 20);  // emulated; 0: the real device
  int docs = 40;                    // documents per task for accuracy (0: all)
  int shots = 5;                    // few-shot examples for accuracy
  int64_t eval_prefix_tokens = 0;   // > 0: instead, per task as many as fit in this many tokens
  int analysis_docs = 16;           // documents for the motivation measurements
  std::vector<double> retentions = {0.5, 0.25, 0.1, 0.05};  // Fig. 15 and spi (Fig. 5)
  // The retrieval task (data/retrieval.h) in spi: haystack size and questions.
  int64_t retrieval_tokens = 1024;
  int retrieval_questions = 40;
  std::vector<double> alphas = {0, 0.3, 0.6, 1, 2};        // Fig. 22
  std::vector<int> chunks = {16, 32, 64, 128, 256};        // Fig. 23
  std::vector<int> pools = {4, 8, 16, 32};                 // Fig. 24
  std::string kv_dtype = "float16";
  // The selection knobs of every run and eval (ITF unit, probe layout,
  // importance shape); each figure sets the retention and alpha it sweeps.
  // Probe layout spread: its stores get their own folders.
  SelectorOptions select;
  int eval_chunk = 16;  // evals cut their short few-shot prefixes into eval_chunk tokens
  uint64_t seed = 1234;
  // The codec figure's second slow tier: a Redis Cluster (redis://HOST:PORT)
  // that a reader with an empty local store reads at remote_bw bytes/s ("": disk only).
  std::string remote;
  double remote_bw = 16.0 * (1 << 20);
};

// A model the figures run on (Fig. 25 runs every one given).
struct FigureModel {
  std::string dir;
  Model* model;
  const Tokenizer* tok;
};

// A figure's column: a stable id (what scripts read; never renamed) and the
// label a reader sees (free to change).
struct FigureColumn {
  std::string id, label;
};

struct Figure {
  std::string name, title;
  std::string paper;                 // the paper's claim for this figure
  std::string headline;              // this run's answer to it, one line (Make sets it from the rows)
  std::vector<FigureColumn> columns;
  std::vector<std::string> labels() const;
  std::vector<std::string> ids() const;
  std::vector<std::vector<nlohmann::json>> rows;
  nlohmann::ordered_json series = nlohmann::ordered_json::object();  // what the plot draws beyond rows
  nlohmann::ordered_json notes = nlohmann::ordered_json::array();    // how to read it at this scale
};

// How scripts/tables/plot.py draws a figure from its JSON: a chart kind and the
// column ids it reads. Kinds on one axis: "grouped_bars" (group, series,
// value: a group per distinct group cell, a bar per series cell),
// "wide_bars" (group, then the value columns side by side), "lines" (x, then
// the y columns). Any other kind is one of plot.py's own drawings, named for
// what it draws, which reads the columns and series it needs itself.
struct FigureChart {
  FigureChart(std::string k, std::vector<std::string> cols = {}, std::string y = "", bool log_x = false)
      : kind(std::move(k)), columns(std::move(cols)), ylabel(std::move(y)), logx(log_x) {}
  std::string kind;
  std::vector<std::string> columns;
  std::string ylabel;
  bool logx = false;  // lines: x on a log2 axis
};

// Runs the experiments figures share once per configuration.
class FigureRunner {
 public:
  // Stores live under store_root, one folder per model and chunk size.
  FigureRunner(std::vector<FigureModel> models, FigureScale scale, std::string data, std::string store_root);

  // Figure names, in the order `all` runs them (the registry's order).
  static const std::vector<std::string>& Names();
  // How figure `name` is drawn. REQUIRES: a registered name.
  static const FigureChart& ChartOf(const std::string& name);
  // Figure `f`'s headline as its registry row computes it ("" for a figure
  // without one). REQUIRES: a registered name.
  static std::string HeadlineOf(const std::string& name, const Figure& f);
  // One figure; errors: an unknown name, or what its experiments return.
  StatusOr<Figure> Make(const std::string& name);

  const FigureScale& scale() const { return scale_; }

 private:
  // One registered figure: its name, what makes it, how it is drawn and
  // its headline (experiment/figure_headline.h; may be empty).
  struct Entry {
    std::string name;
    std::function<StatusOr<Figure>(FigureRunner&)> make;
    FigureChart chart;
    std::function<std::string(const Figure&)> headline;
  };
  static const std::vector<Entry>& Registry();
  static const Entry* Find(const std::string& name);  // null for an unregistered name
  // The store folder of `c` on model `m`: one per model, KV dtype, chunk size, probe layout and codec.
  std::string StoreDir(const FigureModel& m, const RunConfig& c) const;
  StatusOr<RunResults> Run(const FigureModel& m, RunConfig c);
  // h2o-lfu and impress alone under `c` on the first model (fig23, fig24's sweeps).
  struct BaselineAndImpress {
    RunResult baseline, impress;
    int64_t kv_bytes_per_token = 0;
  };
  StatusOr<BaselineAndImpress> H2oLfuAndImpress(RunConfig c);
  StatusOr<EvalResult> Eval(const FigureModel& m, EvalConfig c);
  RunConfig BaseRun(const std::string& task) const;
  // recomp on `tasks` at the accuracy scale.
  EvalConfig BaseEval(std::vector<std::string> tasks) const;
  // Every system over `task` at the base configuration (shared by Fig. 16-21).
  StatusOr<RunResults> AllSystems(const std::string& task);

  StatusOr<Figure> Fig15();
  StatusOr<Figure> Spi();  // the paper's Fig. 5: recall of H2O's exact top-k, and accuracy, vs retention
  StatusOr<Figure> TtftFigure(const std::string& name);  // fig16, fig17, tail, io-share
  StatusOr<Figure> Fig18();
  StatusOr<Figure> Fig19();
  StatusOr<Figure> Fig20();
  StatusOr<Figure> Fig21();
  StatusOr<Figure> Fig22();
  StatusOr<Figure> Fig23();
  StatusOr<Figure> Fig24();
  StatusOr<Figure> Fig25();
  StatusOr<Figure> Motivation(const std::string& name);  // head-jaccard, similarity-ratio, chunk-importance
  StatusOr<const HeadAnalysis*> MemoHeadAnalysis();  // the memoized head analysis Motivation draws
  StatusOr<Figure> Codec();
  // `c` with the cluster as its slow tier: the pool published by a writer,
  // then read by a reader whose local store starts empty.
  StatusOr<RunResults> FromCluster(RunConfig c);

  std::vector<FigureModel> models_;
  FigureScale scale_;
  std::string data_, store_root_;
  std::map<std::string, EvalResult> evals_;  // by their configuration
  std::map<std::string, HeadAnalysis> analyses_;  // by model and task
  std::map<std::string, RunResults> runs_;             // runs, by their configuration
};

}  // namespace impress
