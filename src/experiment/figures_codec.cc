// The codec figure: bytes, TTFT and accuracy per KV codec (not in the paper).
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
      for (const std::string& unit : ItfUnitNames()) {
        RunConfig c = BaseRun(scale_.task);
        c.kv_codec = codec;
        c.select.unit = *ParseItfUnit(unit);
        c.systems.clear();
        for (const auto& [sys, u] : points)  // the cluster's reads are slow: the baseline and IMPRESS only
          if (u == unit && (tier == "disk" || sys == kH2oLfu || sys == kImpress)) c.systems.push_back(sys);
        if (c.systems.empty()) continue;
        ASSIGN_OR_RETURN(RunResults run, tier == "disk" ? Run(models_[0], c) : FromCluster(c));
        for (const std::string& sys : c.systems) {
          ASSIGN_OR_RETURN(const RunResult* r, run.Find(sys));
          const TierCounts& b = r->bytes_read;
          const double mb = static_cast<double>(b.Total() - b[kTiers[0]]) / 1e6 /  // from below the fastest tier
                            std::max(1, r->requests);
          const std::string at = tier + "|" + sys + "|" + unit;
          if (codec == "fp16") fp16_mb[at] = mb;
          EvalConfig e = BaseEval(scale_.tasks);
          e.system = sys == kImpress ? kImpressItf : sys;  // impress chooses as impress-itf does
          e.select.retention = TtftRetention(scale_.task);
          e.select.unit = c.select.unit;
          e.kv_codec = codec;
          ASSIGN_OR_RETURN(const EvalResult acc, Eval(models_[0], e));
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
