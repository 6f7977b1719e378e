#include "experiment/figures.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "common/named.h"
#include "data/task.h"
#include "data/workload.h"
#include "engine/systems.h"
#include "experiment/head_analysis.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/importance.h"

namespace impress {
using namespace system_name;  // the systems the figures pick, by their registry names
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;


// The paper's TTFT retention: 50% for COPA, 25% for the others.
double TtftRetention(const std::string& task) { return task == "copa" ? 0.5 : 0.25; }

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

// The mean accuracy over an eval's tasks.
double MeanAcc(const ojson& eval) {
  double sum = 0;
  for (const auto& r : eval["results"]) sum += r["acc"].get<double>();
  return eval["results"].empty() ? 0 : sum / static_cast<double>(eval["results"].size());
}

// Share of documents on which two evals' "preds" (same documents) name the same choice.
double Agreement(const ojson& preds, const ojson& reference) {
  size_t same = 0;
  for (size_t i = 0; i < preds.size() && i < reference.size(); ++i) same += preds[i] == reference[i];
  return reference.empty() ? 0 : double(same) / reference.size();
}

std::string Base(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().filename().string();
  return s.empty() ? std::filesystem::path(dir).lexically_normal().parent_path().filename().string() : s;
}

// What identifies a run: the model and every field of its config.
ojson Key(const std::string& model, const RunConfig& c) {
  ojson k = c.ToJson();
  k["model"] = model;
  return k;
}

// Names the experiment about to run on stderr (they take minutes).
void Announce(const std::string& what) { std::fprintf(stderr, "reproduce: %s\n", what.c_str()); }

}  // namespace

FigureRunner::FigureRunner(std::vector<FigureModel> models, FigureScale scale, std::string data,
                           std::string store_root)
    : models_(std::move(models)), scale_(std::move(scale)), data_(std::move(data)), store_root_(std::move(store_root)) {}

// The figure registry: each name once, with what makes it, in `all`'s order.
const std::vector<FigureRunner::Entry>& FigureRunner::Registry() {
  static const std::vector<Entry> entries = {
      {"io-share", [](FigureRunner& r) { return r.TtftFigure("io-share"); }},
      {"head-jaccard", [](FigureRunner& r) { return r.Motivation("head-jaccard"); }},
      {"similarity-ratio", [](FigureRunner& r) { return r.Motivation("similarity-ratio"); }},
      {"chunk-importance", [](FigureRunner& r) { return r.Motivation("chunk-importance"); }},
      {"spi", [](FigureRunner& r) { return r.Spi(); }},
      {"fig15", [](FigureRunner& r) { return r.Fig15(); }},
      {"fig16", [](FigureRunner& r) { return r.TtftFigure("fig16"); }},
      {"fig17", [](FigureRunner& r) { return r.TtftFigure("fig17"); }},
      {"tail", [](FigureRunner& r) { return r.TtftFigure("tail"); }},
      {"fig18", [](FigureRunner& r) { return r.Fig18(); }},
      {"fig19", [](FigureRunner& r) { return r.Fig19(); }},
      {"fig20", [](FigureRunner& r) { return r.Fig20(); }},
      {"fig21", [](FigureRunner& r) { return r.Fig21(); }},
      {"fig22", [](FigureRunner& r) { return r.Fig22(); }},
      {"fig23", [](FigureRunner& r) { return r.Fig23(); }},
      {"fig24", [](FigureRunner& r) { return r.Fig24(); }},
      {"fig25", [](FigureRunner& r) { return r.Fig25(); }},
      {"codec", [](FigureRunner& r) { return r.Codec(); }},
  };
  return entries;
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
  c.gpu_cache = scale_.gpu_cache;
  c.cpu_cache = scale_.cpu_cache;
  c.disk_bw = scale_.disk_bw;
  c.h2d_bw = scale_.h2d_bw;
  c.kv_dtype = scale_.kv_dtype;
  c.retention = TtftRetention(task);
  c.itf_unit = scale_.itf_unit;
  c.probe_layout = scale_.probe_layout;
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
  c.itf_unit = scale_.itf_unit;
  c.chunk = scale_.eval_chunk;
  c.probe_layout = scale_.probe_layout;
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
         (c.probe_layout == "first" ? "" : "-" + c.probe_layout) + (c.kv_codec == "fp16" ? "" : "-" + c.kv_codec);
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
          std::to_string(c.chunk) + ", alpha " + std::to_string(c.alpha).substr(0, 4));
  ASSIGN_OR_RETURN(RunResults r, RunSystems(*m.model, *m.tok, c));
  r.model = m.dir;
  return runs_[key] = std::move(r);
}

StatusOr<ojson> FigureRunner::Eval(const FigureModel& m, EvalConfig c) {
  c.data = data_;
  const std::string key = ojson{{"model", m.dir}, {"tasks", c.tasks}, {"system", c.system}, {"shots", c.shots},
                                {"prefix_tokens", c.prefix_tokens},
                                {"limit", c.limit}, {"seed", c.seed}, {"retention", c.retention}, {"alpha", c.alpha},
                                {"itf_unit", c.itf_unit}, {"chunk", c.chunk}, {"probe_layout", c.probe_layout},
                                {"kv_codec", c.kv_codec}, {"recall", c.recall}}
                              .dump();
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  Announce("eval " + c.system + " retention " + std::to_string(c.retention).substr(0, 4));
  ASSIGN_OR_RETURN(ojson r, EvalTasks(*m.model, *m.tok, c));
  return memo_[key] = std::move(r);
}

StatusOr<RunResults> FigureRunner::AllSystems(const std::string& task) { return Run(models_[0], BaseRun(task)); }

StatusOr<Figure> FigureRunner::Make(const std::string& name) {
  for (const Entry& e : Registry())
    if (e.name == name) return e.make(*this);
  return Status::InvalidArgument("unknown figure '" + name + "' (" + JoinNames(Names()) + ", all)");
}

StatusOr<Figure> FigureRunner::Fig15() {
  Figure f;
  f.name = "fig15";
  f.title = "Accuracy vs retention";
  f.paper = "IMPRESS within 1 point of AS+H2O+LRU everywhere, 0.2 points on average";
  f.columns = {{"task", "task"}, {"retention", "retention"}, {"acc_recomp", kRecomp}, {"acc_h2o_lru", kH2oLru}, {"acc_impress_itf", kImpressItf}, {"itf_minus_h2o_points", "impress-itf minus h2o-lru (points)"}, {"h2o_lru_agrees", "h2o-lru agrees with recomp"}, {"impress_itf_agrees", "impress-itf agrees with recomp"}};
  const EvalConfig base = BaseEval(scale_.tasks);
  ASSIGN_OR_RETURN(ojson recomp, Eval(models_[0], base));
  double diff_sum = 0;
  int cells = 0;
  for (double r : scale_.retentions) {
    EvalConfig h = base, i = base;
    h.system = kH2oLru;
    i.system = kImpressItf;
    h.retention = i.retention = r;
    ASSIGN_OR_RETURN(ojson hr, Eval(models_[0], h));
    ASSIGN_OR_RETURN(ojson ir, Eval(models_[0], i));
    for (size_t t = 0; t < scale_.tasks.size(); ++t) {
      const double a = recomp["results"][t]["acc"], b = hr["results"][t]["acc"], c = ir["results"][t]["acc"];
      const ojson& full = recomp["results"][t]["preds"];
      f.rows.push_back({scale_.tasks[t], r, a, b, c, 100 * (c - b), Agreement(hr["results"][t]["preds"], full),
                        Agreement(ir["results"][t]["preds"], full)});
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
  const std::vector<std::pair<std::string, std::string>> systems = {
      {kStatic, "token"}, {kRandom, "token"}, {kH2oLru, "token"}, {kImpressItf, "token"}, {kImpressItf, "chunk"}};
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
    ASSIGN_OR_RETURN(ojson full, Eval(models_[0], base));
    const double acc_full = full["results"][0]["acc"];
    for (double r : scale_.retentions) {
      for (const auto& [system, unit] : systems) {
        EvalConfig e = base;
        e.system = system;
        e.itf_unit = unit;
        e.retention = r;
        e.recall = true;
        ASSIGN_OR_RETURN(ojson got, Eval(models_[0], e));
        const ojson& res = got["results"][0];
        f.rows.push_back({task, r, system + (system == kImpressItf ? " (" + unit + ")" : ""),
                          res.value("recall_h2o", 0.0), res["acc"], acc_full, res["kept_share"]});
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

StatusOr<Figure> FigureRunner::TtftFigure(const std::string& name) {
  Figure f;
  f.name = name;
  std::vector<std::string> systems;
  if (name == "fig16") {
    f.title = "Mean TTFT per system and task";
    f.paper = "IMPRESS 1.2x-2.8x lower TTFT than AS+H2O+LFU";
    f.columns = {{"task", "task"}, {"system", "system"}, {"ttft_mean_ms", "ttft mean ms"}, {"h2o_lfu_over_system", "h2o-lfu / system"}};
    systems = {kRecomp, kAs, kH2oLru, kH2oLfu, kImpress};
  } else if (name == "fig17") {
    f.title = "Prefix-KV I/O time per system and task";
    f.paper = "IMPRESS 1.5x-3.8x less I/O time than AS+H2O+LFU";
    f.columns = {{"task", "task"}, {"system", "system"}, {"io_mean_ms", "io mean ms"}, {"disk_mb_per_request", "MB from disk per request"}, {"h2o_lfu_over_system_io", "h2o-lfu / system (io time)"}};
    systems = {kAs, kH2oLru, kH2oLfu, kImpress};
  } else if (name == "tail") {
    f.title = "p99 TTFT per system";
    f.paper = "OPT-30B/RTE: ReComp 3.9 s, AS-like 9.3 s, AS+H2O+LRU 6.6 s, AS+H2O+LFU 5.9 s, IMPRESS 2.95 s";
    f.columns = {{"task", "task"}, {"system", "system"}, {"ttft_p99_ms", "ttft p99 ms"}, {"ttft_p50_ms", "ttft p50 ms"}};
    systems = {kRecomp, kAs, kH2oLru, kH2oLfu, kImpress};
  } else {
    f.title = "I/O share of TTFT when the prefix KV comes from storage (AS)";
    f.paper = "51%-98% of TTFT is prefix-KV I/O";
    f.columns = {{"task", "task"}, {"ttft_mean_ms", "ttft mean ms"}, {"io_mean_ms", "io mean ms"}, {"io_share", "io share"}};
  }
  for (const std::string& task : scale_.tasks) {
    ASSIGN_OR_RETURN(RunResults all, AllSystems(task));
    if (name == "io-share") {
      ASSIGN_OR_RETURN(const RunResult* r, all.Find(kAs));
      f.rows.push_back({task, r->ttft_ms.mean, r->io_ms_mean, r->io_share});
      continue;
    }
    ASSIGN_OR_RETURN(const RunResult* base, all.Find(kH2oLfu));
    for (const std::string& s : systems) {
      ASSIGN_OR_RETURN(const RunResult* r, all.Find(s));
      const double ttft = r->ttft_ms.mean, io = r->io_ms_mean;
      const double disk_mb = static_cast<double>(r->bytes_read[Tier::kDisk]) / 1e6 / std::max(1, r->requests);
      if (name == "fig16") f.rows.push_back({task, s, ttft, Ratio(base->ttft_ms.mean, ttft)});
      if (name == "fig17") f.rows.push_back({task, s, io, disk_mb, Ratio(base->io_ms_mean, io)});
      if (name == "tail") f.rows.push_back({task, s, r->ttft_ms.p99, r->ttft_ms.p50});
    }
  }
  if (scale_.disk_bw > 0)
    f.notes.push_back("disk reads capped at " + std::to_string(scale_.disk_bw / (1 << 20)).substr(0, 5) +
                      " MiB/s and host-to-device copies at " + std::to_string(scale_.h2d_bw / (1 << 20)).substr(0, 5) +
                      " MiB/s (the GPU tier is emulated in host memory on a CPU-only machine)");
  f.notes.push_back("retention 50% on COPA, 25% elsewhere, as in the paper");
  return f;
}

StatusOr<Figure> FigureRunner::Fig18() {
  Figure f;
  f.name = "fig18";
  f.title = "Ablation: AS+H2O+LFU, +ITF, +RO, All";
  f.paper = "each step lowers TTFT; the steps' shares vary by model and task";
  f.columns = {{"task", "task"}, {"step", "step"}, {"system", "system"}, {"ttft_mean_ms", "ttft mean ms"}, {"ttft_p99_ms", "ttft p99 ms"}, {"reduction_share", "share of the total reduction"}};
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"AS+H2O+LFU", kH2oLfu}, {"+ITF", kImpressItf}, {"+RO", kImpressItfRo}, {"All (+score cache)", kImpress}};
  for (const std::string& task : scale_.tasks) {
    ASSIGN_OR_RETURN(RunResults all, AllSystems(task));
    ASSIGN_OR_RETURN(const RunResult* base, all.Find(kH2oLfu));
    ASSIGN_OR_RETURN(const RunResult* best, all.Find(kImpress));
    const double total = base->ttft_ms.mean - best->ttft_ms.mean;
    double prev = base->ttft_ms.mean;
    for (const auto& [step, s] : steps) {
      ASSIGN_OR_RETURN(const RunResult* r, all.Find(s));
      const double t = r->ttft_ms.mean;
      f.rows.push_back({task, step, s, t, r->ttft_ms.p99, s == kH2oLfu ? 0.0 : Ratio(prev - t, total)});
      prev = t;
    }
  }
  return f;
}

StatusOr<Figure> FigureRunner::Fig19() {
  Figure f;
  f.name = "fig19";
  f.title = "Per-layer share of the prefix's KV chunks loaded with ITF";
  f.paper = "varies by layer; under 20% of layers fall back";
  f.columns = {{"task", "task"}, {"load_ratio_mean", "mean load ratio"}, {"load_ratio_min", "min"}, {"load_ratio_max", "max"}, {"fallback_share", "fallback share"}, {"layers_mostly_fallback", "layers that fell back in >50% of requests"}};
  for (const std::string& task : scale_.tasks) {
    ASSIGN_OR_RETURN(RunResults all, AllSystems(task));
    ASSIGN_OR_RETURN(const RunResult* r, all.Find(kImpressItf));
    const std::vector<double>&load = r->layer_kv_load_ratio, &fb = r->layer_fallback_share;
    double sum = 0, lo = 1, hi = 0;
    int often = 0;
    for (size_t l = 0; l < load.size(); ++l) {
      sum += load[l];
      lo = std::min(lo, load[l]);
      hi = std::max(hi, load[l]);
      often += fb[l] > 0.5;
    }
    f.rows.push_back({task, load.empty() ? 0 : sum / load.size(), lo, hi, r->fallback_share, often});
    f.series[task] = {{"layer_kv_load_ratio", load}, {"layer_fallback_share", fb}};
  }
  return f;
}

StatusOr<Figure> FigureRunner::Fig20() {
  Figure f;
  f.name = "fig20";
  f.title = "K/V chunks read per request, without and with reordering";
  f.paper = "1.2x fewer chunks with RO";
  f.columns = {{"task", "task"}, {"kv_chunks_impress_itf", kImpressItf}, {"kv_chunks_impress_itf_ro", kImpressItfRo}, {"without_over_with_ro", "without / with RO"}};
  for (const std::string& task : scale_.tasks) {
    ASSIGN_OR_RETURN(RunResults all, AllSystems(task));
    ASSIGN_OR_RETURN(const RunResult* itf, all.Find(kImpressItf));
    ASSIGN_OR_RETURN(const RunResult* ro, all.Find(kImpressItfRo));
    const double a = itf->kv_chunks_per_request, b = ro->kv_chunks_per_request;
    f.rows.push_back({task, a, b, Ratio(a, b)});
  }
  return f;
}

StatusOr<Figure> FigureRunner::Fig21() {
  Figure f;
  f.name = "fig21";
  f.title = "GPU hit rate of the K/V chunks read: LFU vs score-based cache";
  f.paper = "68% (LFU) -> 80% (score-based)";
  f.columns = {{"task", "task"}, {"kv_hit_gpu_lfu", "LFU (impress-itf-ro)"}, {"kv_hit_gpu_score", "score (impress)"}, {"hit_gpu_lfu", "all loads LFU"}, {"hit_gpu_score", "all loads score"}};
  for (const std::string& task : scale_.tasks) {
    ASSIGN_OR_RETURN(RunResults all, AllSystems(task));
    ASSIGN_OR_RETURN(const RunResult* a, all.Find(kImpressItfRo));
    ASSIGN_OR_RETURN(const RunResult* b, all.Find(kImpress));
    f.rows.push_back({task, a->kv_hit_gpu, b->kv_hit_gpu, a->hit_gpu, b->hit_gpu});
  }
  return f;
}

StatusOr<Figure> FigureRunner::Fig22() {
  Figure f;
  f.name = "fig22";
  f.title = "Threshold exponent alpha: TTFT, KV loaded and accuracy";
  f.paper = "larger alpha: less loaded, lower TTFT, slightly lower accuracy; 0.6 balances";
  f.columns = {{"alpha", "alpha"}, {"ttft_mean_ms", "ttft mean ms"}, {"kv_chunks_per_request", "KV chunks/req"}, {"fallback_share", "fallback share"}, {"acc", "acc (eval)"}};
  for (double alpha : scale_.alphas) {
    RunConfig c = BaseRun(scale_.task);
    c.systems = {kImpress};
    c.alpha = alpha;
    ASSIGN_OR_RETURN(RunResults run, Run(models_[0], c));
    EvalConfig e = BaseEval({scale_.task});
    e.system = kImpressItf;
    e.retention = c.retention;
    e.alpha = alpha;
    ASSIGN_OR_RETURN(ojson ev, Eval(models_[0], e));
    ASSIGN_OR_RETURN(const RunResult* r, run.Find(kImpress));
    f.rows.push_back({alpha, r->ttft_ms.mean, r->kv_chunks_per_request, r->fallback_share, ev["results"][0]["acc"]});
  }
  f.notes.push_back("task " + scale_.task + "; accuracy from eval on " + std::to_string(scale_.docs) + " documents");
  return f;
}

StatusOr<Figure> FigureRunner::Fig23() {
  Figure f;
  f.name = "fig23";
  f.title = "Chunk size: TTFT of AS+H2O+LFU and IMPRESS";
  f.paper = "IMPRESS 2.2x-2.4x faster than the baseline at every chunk size (16-256)";
  f.columns = {{"chunk_tokens", "chunk tokens"}, {"h2o_lfu_ttft_ms", "h2o-lfu ttft ms"}, {"impress_ttft_ms", "impress ttft ms"}, {"speedup", "speedup"}, {"impress_kv_chunks_per_request", "impress KV chunks/req"}};
  for (int chunk : scale_.chunks) {
    RunConfig c = BaseRun(scale_.task);
    c.systems = {kH2oLfu, kImpress};
    c.chunk = chunk;
    ASSIGN_OR_RETURN(RunResults run, Run(models_[0], c));
    ASSIGN_OR_RETURN(const RunResult* base, run.Find(kH2oLfu));
    ASSIGN_OR_RETURN(const RunResult* best, run.Find(kImpress));
    const double a = base->ttft_ms.mean, b = best->ttft_ms.mean;
    f.rows.push_back({chunk, a, b, Ratio(a, b), best->kv_chunks_per_request});
  }
  f.notes.push_back("task " + scale_.task);
  return f;
}

StatusOr<Figure> FigureRunner::Fig24() {
  Figure f;
  f.name = "fig24";
  f.title = "Prefix pool size: TTFT of AS+H2O+LFU and IMPRESS";
  f.paper = "1.2x-2.0x faster across pools of 65-400 GB";
  f.columns = {{"pool_prefixes", "pool prefixes"}, {"pool_mb", "pool MB (KV)"}, {"h2o_lfu_ttft_ms", "h2o-lfu ttft ms"}, {"impress_ttft_ms", "impress ttft ms"}, {"speedup", "speedup"}};
  for (int pool : scale_.pools) {
    RunConfig c = BaseRun(scale_.task);
    c.systems = {kH2oLfu, kImpress};
    c.pool = pool;
    ASSIGN_OR_RETURN(RunResults run, Run(models_[0], c));
    ASSIGN_OR_RETURN(const RunResult* base, run.Find(kH2oLfu));
    ASSIGN_OR_RETURN(const RunResult* best, run.Find(kImpress));
    const double a = base->ttft_ms.mean, b = best->ttft_ms.mean;
    const double mb = double(pool) * c.prefix_tokens * static_cast<double>(run.kv_bytes_per_token) / 1e6;
    f.rows.push_back({pool, mb, a, b, Ratio(a, b)});
  }
  f.notes.push_back("task " + scale_.task + "; caches fixed while the pool grows");
  return f;
}

StatusOr<Figure> FigureRunner::Fig25() {
  Figure f;
  f.name = "fig25";
  f.title = "Model types: TTFT of AS, AS+H2O+LFU and IMPRESS";
  f.paper = "Llama2-7B, Llama2-13B: IMPRESS 1.7x-2.7x faster";
  f.columns = {{"model", "model"}, {"system", "system"}, {"ttft_mean_ms", "ttft mean ms"}, {"h2o_lfu_over_system", "h2o-lfu / system"}};
  for (const FigureModel& m : models_) {
    RunConfig c = BaseRun(scale_.task);
    c.systems = {kAs, kH2oLfu, kImpress};
    ASSIGN_OR_RETURN(RunResults run, Run(m, c));
    ASSIGN_OR_RETURN(const RunResult* base, run.Find(kH2oLfu));
    for (const std::string& s : c.systems) {
      ASSIGN_OR_RETURN(const RunResult* r, run.Find(s));
      f.rows.push_back({Base(m.dir), s, r->ttft_ms.mean, Ratio(base->ttft_ms.mean, r->ttft_ms.mean)});
    }
  }
  f.notes.push_back("task " + scale_.task + "; every --model given");
  return f;
}

StatusOr<Figure> FigureRunner::Motivation(const std::string& name) {
  const FigureModel& m = models_[0];
  const std::string key = "analysis " + m.dir + " " + scale_.task;
  if (!memo_.count(key)) {
    const TaskSpec* task = FindTask(scale_.task);
    if (task == nullptr) return Status::InvalidArgument("--task: unknown task '" + scale_.task + "'");
    ASSIGN_OR_RETURN(std::vector<Doc> train, LoadSplit(*task, SplitPath(data_, *task, task->train_split)));
    ASSIGN_OR_RETURN(std::vector<Doc> docs, LoadSplit(*task, SplitPath(data_, *task, task->eval_split)));
    PrefixPoolOptions po{1, scale_.prefix_tokens, scale_.seed};
    ASSIGN_OR_RETURN(std::vector<PooledPrefix> pool, BuildPrefixPool(train, *m.tok, po));
    docs.resize(std::min<size_t>(docs.size(), scale_.analysis_docs));
    HeadAnalysisOptions o;
    o.retention = TtftRetention(scale_.task);
    Announce("head analysis " + scale_.task);
    ASSIGN_OR_RETURN(HeadAnalysis a, AnalyzeHeads(*m.model, *m.tok, pool[0].text, docs, o));
    memo_[key] = {{"layers", a.layers}, {"heads", a.heads}, {"docs", a.docs}, {"prefix_tokens", a.prefix_tokens},
                  {"retention", o.retention}, {"chunk_tokens", o.chunk_tokens}, {"probe_heads", o.probe_heads},
                  {"retentions", o.retentions}, {"jaccard", a.jaccard}, {"all_heads", a.all_heads},
                  {"probe", a.probe_heads}, {"random", a.random}, {"histogram", a.histogram},
                  {"chunks_read", a.chunks_read}, {"important_share_mean", a.important_share_mean}};
  }
  const ojson& a = memo_[key];
  Figure f;
  f.name = name;
  const std::string scope = "task " + scale_.task + ", one " + std::to_string(a["prefix_tokens"].get<int>()) +
                            "-token prefix, " + std::to_string(a["docs"].get<int>()) + " documents";
  f.notes.push_back(scope);
  if (name == "head-jaccard") {
    f.title = "Jaccard index between heads' important-token sets, per layer (observation 1)";
    f.paper = "heads of a layer agree on important tokens far more than random sets do";
    f.columns = {{"layer", "layer"}, {"jaccard_all_heads", "mean pairwise Jaccard (all heads)"}, {"jaccard_probe_heads", "probe heads"}, {"jaccard_random", "random sets"}};
    const int h = a["heads"], probes = a["probe_heads"];
    const int64_t n = a["prefix_tokens"];
    const double kn = double(RetainedTokens(a["retention"].get<double>(), n)) / n;
    const double rnd = kn / (2 - kn);
    for (int l = 0; l < a["layers"].get<int>(); ++l) {
      std::vector<double> m2 = a["jaccard"][l];
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
      f.rows.push_back({l, all / (h * (h - 1)), np ? probe / np : 1.0, rnd});
    }
    f.series = {{"heads", h}, {"retention", a["retention"]}, {"jaccard", a["jaccard"]}};
  } else if (name == "similarity-ratio") {
    f.title = "Head similarity vs selection ratio (observation 2)";
    f.paper = "similarity rises with the selection ratio, as does the random baseline; the threshold tracks it";
    f.columns = {{"selection_ratio", "selection ratio"}, {"jaccard_all_heads", "all heads"}, {"jaccard_probe_heads", "probe heads"}, {"jaccard_random", "random sets"}, {"jaccard_threshold", "threshold (alpha 0.6)"}};
    for (size_t i = 0; i < a["retentions"].size(); ++i) {
      const double rnd = a["random"][i];
      f.rows.push_back({a["retentions"][i], a["all_heads"][i], a["probe"][i], rnd, std::pow(rnd, 0.6)});
    }
  } else {
    f.title = "Important share of each chunk read (read amplification)";
    f.paper = "46% of the KV in chunks read is important (2.2x read amplification)";
    f.columns = {{"important_share", "important share of the chunk"}, {"chunks", "chunks"}, {"fraction_read", "fraction of chunks read"}};
    const double n = a["chunks_read"].get<double>();
    for (int i = 0; i < 10; ++i) {
      char label[32];
      std::snprintf(label, sizeof label, "(%.1f, %.1f]", i / 10.0, (i + 1) / 10.0);
      const int64_t c = a["histogram"][i];
      f.rows.push_back({label, c, n > 0 ? c / n : 0});
    }
    const double mean = a["important_share_mean"];
    f.notes.push_back("mean important share " + std::to_string(mean).substr(0, 5) + " => read amplification " +
                      std::to_string(mean > 0 ? 1 / mean : 0).substr(0, 4) + "x at retention " +
                      std::to_string(a["retention"].get<double>()).substr(0, 4) + ", " +
                      std::to_string(a["chunk_tokens"].get<int>()) + "-token chunks");
    f.series = {{"important_share_mean", mean}, {"histogram", a["histogram"]}};
  }
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
  c.store = base + "-reader-" + c.itf_unit;
  std::error_code ec;
  std::filesystem::remove_all(c.store, ec);  // the reader's local tiers start empty
  if (ec) return Status::IOError(c.store + ": cannot empty it: " + ec.message());
  return Run(models_[0], c);
}

StatusOr<Figure> FigureRunner::Codec() {
  Figure f;
  f.name = "codec";
  f.title = "Quantized KV below the GPU: bytes, TTFT and accuracy per codec";
  f.paper = "not in the paper (IMPRESS stores float16 KV); int8 within 0.5 points, int4 within 1 point of fp16 accuracy";
  f.columns = {{"slow_tier", "slow tier"}, {"codec", "codec"}, {"system", "system"}, {"itf_unit", "ITF unit"},
               {"ttft_mean_ms", "ttft mean ms"}, {"ttft_p99_ms", "ttft p99 ms"}, {"io_share", "I/O share"},
               {"mb_below_gpu_per_request", "MB below the GPU per request"},
               {"fp16_over_codec_bytes", "fp16 / codec bytes"}, {"acc", "acc (eval)"}};
  const std::vector<std::string> codecs = {"fp16", "int8", "int4"};
  std::vector<std::string> tiers = {"disk"};
  if (!scale_.remote.empty()) tiers.push_back("cluster");
  // (system, ITF unit): the baselines do not depend on the unit.
  const std::vector<std::pair<std::string, std::string>> points = {
      {kAs, "token"}, {kH2oLfu, "token"}, {kImpressItf, "token"}, {kImpress, "token"},
      {kImpressItf, "chunk"}, {kImpress, "chunk"}};
  std::map<std::string, double> fp16_mb;  // tier|system|unit -> MB below the GPU per request at fp16
  for (const std::string& tier : tiers) {
    for (const std::string& codec : codecs) {
      for (const std::string& unit : {"token", "chunk"}) {
        RunConfig c = BaseRun(scale_.task);
        c.kv_codec = codec;
        c.itf_unit = unit;
        c.systems.clear();
        for (const auto& [sys, u] : points)  // the cluster's reads are slow: the baseline and IMPRESS only
          if (u == unit && (tier == "disk" || sys == kH2oLfu || sys == kImpress)) c.systems.push_back(sys);
        if (c.systems.empty()) continue;
        ASSIGN_OR_RETURN(RunResults run, tier == "disk" ? Run(models_[0], c) : FromCluster(c));
        for (const std::string& sys : c.systems) {
          ASSIGN_OR_RETURN(const RunResult* r, run.Find(sys));
          const TierCounts& b = r->bytes_read;
          const double mb = static_cast<double>(b[Tier::kCpu] + b[Tier::kDisk] + b[Tier::kRemote]) / 1e6 /
                            std::max(1, r->requests);
          const std::string at = tier + "|" + sys + "|" + unit;
          if (codec == "fp16") fp16_mb[at] = mb;
          EvalConfig e = BaseEval(scale_.tasks);
          e.system = sys == kImpress ? kImpressItf : sys;  // impress chooses as impress-itf does
          e.retention = TtftRetention(scale_.task);
          e.itf_unit = unit;
          e.kv_codec = codec;
          ASSIGN_OR_RETURN(ojson acc, Eval(models_[0], e));
          f.rows.push_back({tier, codec, sys, unit, r->ttft_ms.mean, r->ttft_ms.p99, r->io_share, mb,
                            Ratio(fp16_mb[at], mb), MeanAcc(acc)});
        }
      }
    }
  }
  std::string tasks;
  for (const std::string& t : scale_.tasks) tasks += (tasks.empty() ? "" : ",") + t;
  f.notes.push_back("task " + scale_.task + " for TTFT and bytes; accuracy: eval over " + tasks +
                    " (mean), the same retention, " + std::to_string(scale_.docs) + " documents per task");
  f.notes.push_back("MB below the GPU: the CPU tier's, the disk's and the cluster's bytes, as stored (encoded)");
  if (!scale_.remote.empty())
    f.notes.push_back("cluster: a reader with empty local tiers, remote reads capped at " +
                      std::to_string(scale_.remote_bw / (1 << 20)).substr(0, 5) + " MiB/s; h2o-lfu and impress only");
  return f;
}

}  // namespace impress
