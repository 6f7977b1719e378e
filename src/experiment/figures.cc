// The figure runner: its registry, base configurations and the memo of runs and evals.
#include "experiment/figures.h"

#include "experiment/figure_headline.h"

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

FigureRunner::FigureRunner(std::vector<FigureModel> models, FigureScale scale, std::string data,
                           std::string store_root)
    : models_(std::move(models)), scale_(std::move(scale)), data_(std::move(data)), store_root_(std::move(store_root)) {}

// The figure registry: each name once, with what makes it, in `all`'s order.
const std::vector<FigureRunner::Entry>& FigureRunner::Registry() {
  static const std::vector<Entry> entries = {
      {"io-share", [](FigureRunner& r) { return r.TtftFigure("io-share"); },
       {"wide_bars", {"task", "io_share"}, "I/O share of TTFT (as)"}, IoShareHeadline},
      {"head-jaccard", [](FigureRunner& r) { return r.Motivation("head-jaccard"); }, {"head_jaccard_matrices"},
       HeadJaccardHeadline},
      {"similarity-ratio", [](FigureRunner& r) { return r.Motivation("similarity-ratio"); },
       {"lines",
        {"selection_ratio", "jaccard_all_heads", "jaccard_probe_heads", "jaccard_random", "jaccard_threshold"},
        "Jaccard"}, SimilarityRatioHeadline},
      {"chunk-importance", [](FigureRunner& r) { return r.Motivation("chunk-importance"); },
       {"chunk_share_histogram"}, ChunkImportanceHeadline},
      {"spi", [](FigureRunner& r) { return r.Spi(); }, {"recall_and_accuracy_by_retention"}, SpiHeadline},
      {"fig15", [](FigureRunner& r) { return r.Fig15(); }, {"accuracy_by_retention"}, Fig15Headline},
      {"fig16", [](FigureRunner& r) { return r.TtftFigure("fig16"); },
       {"grouped_bars", {"task", "system", "ttft_mean_ms"}, "mean TTFT ms"}, Fig16Headline},
      {"fig17", [](FigureRunner& r) { return r.TtftFigure("fig17"); },
       {"grouped_bars", {"task", "system", "io_mean_ms"}, "I/O time ms"}, Fig17Headline},
      {"tail", [](FigureRunner& r) { return r.TtftFigure("tail"); },
       {"grouped_bars", {"task", "system", "ttft_p99_ms"}, "p99 TTFT ms"}, TailHeadline},
      {"fig18", [](FigureRunner& r) { return r.Fig18(); },
       {"grouped_bars", {"task", "step", "ttft_mean_ms"}, "mean TTFT ms"}, Fig18Headline},
      {"fig19", [](FigureRunner& r) { return r.Fig19(); }, {"layer_load_ratios"}, Fig19Headline},
      {"fig20", [](FigureRunner& r) { return r.Fig20(); },
       {"wide_bars", {"task", "kv_chunks_impress_itf", "kv_chunks_impress_itf_ro"}, "K/V chunks per request"},
       Fig20Headline},
      {"fig21", [](FigureRunner& r) { return r.Fig21(); },
       {"wide_bars", {"task", "kv_hit_gpu_lfu", "kv_hit_gpu_score"}, "GPU hit rate"}, Fig21Headline},
      {"fig22", [](FigureRunner& r) { return r.Fig22(); }, {"alpha_sweep"}, Fig22Headline},
      {"fig23", [](FigureRunner& r) { return r.Fig23(); },
       {"lines", {"chunk_tokens", "h2o_lfu_ttft_ms", "impress_ttft_ms"}, "mean TTFT ms", true}, Fig23Headline},
      {"fig24", [](FigureRunner& r) { return r.Fig24(); },
       {"lines", {"pool_prefixes", "h2o_lfu_ttft_ms", "impress_ttft_ms"}, "mean TTFT ms", true}, Fig24Headline},
      {"fig25", [](FigureRunner& r) { return r.Fig25(); },
       {"grouped_bars", {"model", "system", "ttft_mean_ms"}, "mean TTFT ms"}, Fig25Headline},
      {"codec", [](FigureRunner& r) { return r.Codec(); }, {"codec_bytes_and_ttft"}, nullptr},
  };
  return entries;
}

const FigureRunner::Entry* FigureRunner::Find(const std::string& name) {
  for (const Entry& e : Registry())
    if (e.name == name) return &e;
  return nullptr;
}

const FigureChart& FigureRunner::ChartOf(const std::string& name) {
  const Entry* e = Find(name);
  IMPRESS_CHECK(e != nullptr);  // an unregistered figure
  return e->chart;
}

std::string FigureRunner::HeadlineOf(const std::string& name, const Figure& f) {
  const Entry* e = Find(name);
  IMPRESS_CHECK(e != nullptr);  // an unregistered figure
  return e->headline ? e->headline(f) : "";
}

const std::vector<std::string>& FigureRunner::Names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Entry& e : Registry()) v.push_back(e.name);
    return v;
  }();
  return names;
}

RunConfig FigureRunner::BaseRun(const std::string& task) const {
  RunConfig c;
  c.task = task;
  c.data = data_;
  c.systems = PaperSystemNames();  // in the order the ablation adds IMPRESS's parts
  c.pool = scale_.pool;
  c.prefix_tokens = scale_.prefix_tokens;
  c.requests = scale_.requests;
  c.warmup = scale_.warmup;
  c.cache_bytes = scale_.cache_bytes;
  c.disk_bw = scale_.disk_bw;
  c.h2d_bw = scale_.h2d_bw;
  c.kv_dtype = scale_.kv_dtype;
  c.select = scale_.select;
  c.select.retention = TtftRetention(task);
  c.seed = scale_.seed;
  return c;
}

EvalConfig FigureRunner::BaseEval(std::vector<std::string> tasks) const {
  EvalConfig c;
  c.tasks = std::move(tasks);
  c.shots = scale_.eval_prefix_tokens > 0 ? 0 : scale_.shots;
  c.prefix_tokens = scale_.eval_prefix_tokens;
  c.limit = scale_.docs;
  c.seed = scale_.seed;
  c.select = scale_.select;
  c.chunk = scale_.eval_chunk;
  return c;
}

std::vector<std::string> Figure::labels() const {
  std::vector<std::string> out;
  for (const FigureColumn& c : columns) out.push_back(c.label);
  return out;
}

std::vector<std::string> Figure::ids() const {
  std::vector<std::string> out;
  for (const FigureColumn& c : columns) out.push_back(c.id);
  return out;
}

std::string FigureRunner::StoreDir(const FigureModel& m, const RunConfig& c) const {
  return store_root_ + "/" + Base(m.dir) + "-" + c.kv_dtype + "-c" + std::to_string(c.chunk) +
         (c.select.probe_layout == ProbeLayout::kFirst ? "" : "-" + NameOf(ProbeLayoutNames(), c.select.probe_layout)) + (c.kv_codec == "fp16" ? "" : "-" + c.kv_codec);
}

StatusOr<RunResults> FigureRunner::Run(const FigureModel& m, RunConfig c) {
  if (c.store.empty()) c.store = StoreDir(m, c);
  const std::string key = Key(m.dir, c).dump();
  auto it = runs_.find(key);
  if (it != runs_.end()) return it->second;
  // A run of every system at the same point answers for any subset of them.
  RunConfig every = c;
  every.systems = PaperSystemNames();
  it = runs_.find(Key(m.dir, every).dump());
  if (it != runs_.end()) return it->second;
  Announce("run " + Base(m.dir) + " " + c.task + ", pool " + std::to_string(c.pool) + ", chunk " +
          std::to_string(c.chunk) + ", alpha " + std::to_string(c.select.alpha).substr(0, 4));
  ASSIGN_OR_RETURN(RunResults r, RunSystems(*m.model, *m.tok, c));
  r.model = m.dir;
  return runs_[key] = std::move(r);
}

StatusOr<EvalResult> FigureRunner::Eval(const FigureModel& m, EvalConfig c) {
  c.data = data_;
  const std::string key = ojson{{"model", m.dir}, {"tasks", c.tasks}, {"system", c.system}, {"shots", c.shots},
                                {"prefix_tokens", c.prefix_tokens},
                                {"limit", c.limit}, {"seed", c.seed}, {"retention", c.select.retention},
                                {"alpha", c.select.alpha}, {"itf_unit", NameOf(ItfUnitNames(), c.select.unit)},
                                {"chunk", c.chunk}, {"probe_layout", NameOf(ProbeLayoutNames(), c.select.probe_layout)},
                                {"kv_codec", c.kv_codec}, {"recall", c.recall}}
                              .dump();
  auto it = evals_.find(key);
  if (it != evals_.end()) return it->second;
  Announce("eval " + c.system + " retention " + std::to_string(c.select.retention).substr(0, 4));
  ASSIGN_OR_RETURN(EvalResult r, EvalTasks(*m.model, *m.tok, c));
  return evals_[key] = std::move(r);
}

StatusOr<RunResults> FigureRunner::AllSystems(const std::string& task) { return Run(models_[0], BaseRun(task)); }

StatusOr<Figure> FigureRunner::Make(const std::string& name) {
  const Entry* e = Find(name);
  if (e == nullptr) return Status::InvalidArgument("unknown figure '" + name + "' (" + JoinNames(Names()) + ", all)");
  ASSIGN_OR_RETURN(Figure f, e->make(*this));
  if (e->headline) f.headline = e->headline(f);
  return f;
}

StatusOr<RunResults> FigureRunner::FromCluster(RunConfig c) {
  const std::string base = StoreDir(models_[0], c) + "-cluster";
  RunConfig publish = c;
  publish.systems = {kAs};
  publish.requests = 1, publish.warmup = 0, publish.remote_bw = 0;
  publish.remote = scale_.remote;
  publish.store = base + "-writer";
  RETURN_IF_ERROR(Run(models_[0], publish).status());
  c.remote = scale_.remote;
  c.remote_bw = scale_.remote_bw;
  c.store = base + "-reader-" + NameOf(ItfUnitNames(), c.select.unit);
  std::error_code ec;
  std::filesystem::remove_all(c.store, ec);  // the reader's local tiers start empty
  if (ec) return Status::IOError(c.store + ": cannot empty it: " + ec.message());
  return Run(models_[0], c);
}

}  // namespace impress
