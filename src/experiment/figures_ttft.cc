// The TTFT figures: Fig. 16-25, the tail and the I/O share.
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
    const Tier gpu = Tier::kGpu;  // the paper's figure is the GPU tier's
    f.rows.push_back({task, a->kv_hit_rate[gpu], b->kv_hit_rate[gpu], a->hit_rate[gpu], b->hit_rate[gpu]});
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
    c.select.alpha = alpha;
    ASSIGN_OR_RETURN(RunResults run, Run(models_[0], c));
    EvalConfig e = BaseEval({scale_.task});
    e.system = kImpressItf;
    e.select.retention = c.select.retention;
    e.select.alpha = alpha;
    ASSIGN_OR_RETURN(const EvalResult ev, Eval(models_[0], e));
    ASSIGN_OR_RETURN(const RunResult* r, run.Find(kImpress));
    f.rows.push_back({alpha, r->ttft_ms.mean, r->kv_chunks_per_request, r->fallback_share, ev.results[0].acc});
  }
  f.notes.push_back("task " + scale_.task + "; accuracy from eval on " + std::to_string(scale_.docs) + " documents");
  return f;
}

StatusOr<FigureRunner::BaselineAndImpress> FigureRunner::H2oLfuAndImpress(RunConfig c) {
  c.systems = {kH2oLfu, kImpress};
  ASSIGN_OR_RETURN(RunResults run, Run(models_[0], c));
  ASSIGN_OR_RETURN(const RunResult* baseline, run.Find(kH2oLfu));
  ASSIGN_OR_RETURN(const RunResult* impress, run.Find(kImpress));
  return BaselineAndImpress{*baseline, *impress, run.kv_bytes_per_token};
}

StatusOr<Figure> FigureRunner::Fig23() {
  Figure f;
  f.name = "fig23";
  f.title = "Chunk size: TTFT of AS+H2O+LFU and IMPRESS";
  f.paper = "IMPRESS 2.2x-2.4x faster than the baseline at every chunk size (16-256)";
  f.columns = {{"chunk_tokens", "chunk tokens"}, {"h2o_lfu_ttft_ms", "h2o-lfu ttft ms"}, {"impress_ttft_ms", "impress ttft ms"}, {"speedup", "speedup"}, {"impress_kv_chunks_per_request", "impress KV chunks/req"}};
  for (int chunk : scale_.chunks) {
    RunConfig c = BaseRun(scale_.task);
    c.chunk = chunk;
    ASSIGN_OR_RETURN(const BaselineAndImpress r, H2oLfuAndImpress(c));
    const double a = r.baseline.ttft_ms.mean, b = r.impress.ttft_ms.mean;
    f.rows.push_back({chunk, a, b, Ratio(a, b), r.impress.kv_chunks_per_request});
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
    c.pool = pool;
    ASSIGN_OR_RETURN(const BaselineAndImpress r, H2oLfuAndImpress(c));
    const double a = r.baseline.ttft_ms.mean, b = r.impress.ttft_ms.mean;
    const double mb = double(pool) * c.prefix_tokens * static_cast<double>(r.kv_bytes_per_token) / 1e6;
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

}  // namespace impress
