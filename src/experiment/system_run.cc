#include "experiment/system_run.h"

#include <algorithm>

#include "common/units.h"
#include "kvstore/load_stream.h"

namespace impress {

void SystemRun::Add(const RequestTrace& t, int layers) {
  ttft.push_back(t.ttft_ms);
  io.push_back(t.io_ms);
  select.push_back(t.select_ms);
  importance += t.importance_ms, gather += t.gather_ms, decision += t.decision_ms;
  placement += t.placement_ms;
  bytes += t.load.bytes;
  hits += t.load.hits;
  chunk_loads += t.load.chunks;
  read_chunks += t.load.read;
  reused += t.reused_tokens;
  computed += t.computed_tokens;
  recomputed_after_error += t.recomputed_after_error;
  healed_chunks += t.healed_chunks;
  selection.Merge(t.selection);
  important_sum += t.important_share_sum;
  selected_chunks += t.kv_chunks();
  kv_tier += t.kv_chunk_tier;
  layer_kv_chunks.resize(layers, 0);
  for (size_t l = 0; l < t.layer_kv_chunks.size() && l < layer_kv_chunks.size(); ++l)
    layer_kv_chunks[l] += t.layer_kv_chunks[l];
  prefix_chunks += t.prefix_chunks;
  if (!t.device_layers.empty()) {
    const size_t n = t.device_layers.size();
    device_load.resize(n, 0), device_compute.resize(n, 0), device_wait.resize(n, 0);
    for (size_t l = 0; l < n; ++l) {
      const DeviceLayerTimes& d = t.device_layers[l];
      for (const auto& [b, e] : d.load_busy) device_load[l] += e - b;
      device_compute[l] += d.compute_end - d.compute_begin;
      device_wait[l] += d.wait;
    }
    double busy = 0;
    device_hidden += HiddenLoadMs(t.device_layers, &busy);
    device_busy += busy;
    device_requests++;
  }
  speculated += t.speculated_chunks;
  speculated_used += t.speculated_used;
  for (size_t l = 0; l < t.layer_host_syncs.size(); ++l) {
    const bool fell_back = l < t.selection.fallbacks.size() && t.selection.fallbacks[l] > 0;
    (fell_back ? syncs_fallback : syncs_other) += t.layer_host_syncs[l];
    (fell_back ? layers_fallback : layers_other)++;
    syncs_max = std::max(syncs_max, t.layer_host_syncs[l]);
  }
}

RunResult SystemRun::Summarize(int reorder_every) const {
  RunResult r;
  r.system = system;
  r.requests = n;
  r.ttft_ms = {Mean(ttft), Percentile(ttft, 50), Percentile(ttft, 99)};
  r.io_ms_mean = Mean(io);
  r.io_share = r.ttft_ms.mean > 0 ? r.io_ms_mean / r.ttft_ms.mean : 0;
  r.select_ms_mean = Mean(select);
  if (n > 0) r.select_parts = {importance / n, decision / n, gather / n};
  if (n > 0) r.placement_ms_mean = placement / n;
  auto per = [](int64_t syncs, int64_t layers) { return layers > 0 ? double(syncs) / layers : 0.0; };
  r.host_syncs_per_layer = {per(syncs_fallback + syncs_other, layers_fallback + layers_other),
                            per(syncs_fallback, layers_fallback), per(syncs_other, layers_other), syncs_max};
  r.bytes_read = bytes;
  r.hit_rate = SharesOf(hits, chunk_loads);
  r.chunks_read = read_chunks;
  r.kept_share = selection.KeptShare();
  // Selection reads K/V of chunks holding kept tokens; as reads every chunk.
  r.kv_chunks_per_request = n ? double(r.kept_share < 1.0 ? selected_chunks : chunk_loads) / n : 0;
  // Each tier's share of the chunks whose K/V were read (every load for as).
  r.kv_hit_rate = r.kept_share < 1.0 ? SharesOf(kv_tier, kv_tier.Total()) : r.hit_rate;
  r.chunk_loads = chunk_loads;
  r.reused_tokens = reused;
  r.computed_tokens = computed;
  r.recomputed_after_error = recomputed_after_error;
  r.healed_chunks = healed_chunks;
  r.acc = n ? double(correct) / n : 0;
  r.policy = policy;
  r.fallback_share = selection.FallbackShare();
  r.important_share_of_chunks_read = selected_chunks ? important_sum / selected_chunks : 0;
  SummarizeLayers(&r);
  r.speculated_chunks_per_request = n ? double(speculated) / n : 0;
  r.speculated_used_share = speculated ? double(speculated_used) / speculated : 0;
  r.per_request = per_request;
  if (device_requests > 0) r.device_timeline = SummarizeDevice();
  r.fill = fill;
  r.remote = remote;
  if (reorder) r.reorder = SummarizeReorder(reorder_every);
  return r;
}

void SystemRun::SummarizeLayers(RunResult* r) const {
  for (size_t l = 0; l < selection.total.size(); ++l) {
    r->layer_kept_share.push_back(selection.total[l] ? double(selection.kept[l]) / selection.total[l] : 1.0);
    r->layer_kv_load_ratio.push_back(prefix_chunks && l < layer_kv_chunks.size()
                                         ? double(layer_kv_chunks[l]) / prefix_chunks
                                         : 1.0);
    r->layer_fallback_share.push_back(selection.probes[l] ? double(selection.fallbacks[l]) / selection.probes[l]
                                                          : 0.0);
  }
}

// The share of the load stream's busy time that overlaps the compute
// stream's (docs/gpu.md): copies hidden under compute.
DeviceTimelineSection SystemRun::SummarizeDevice() const {
  DeviceTimelineSection d;
  const double reqs = static_cast<double>(device_requests);
  for (size_t l = 0; l < device_load.size(); ++l)
    d.per_layer_mean.push_back({device_load[l] / reqs, device_compute[l] / reqs, device_wait[l] / reqs});
  d.copy_hidden_share = device_busy > 0 ? device_hidden / device_busy : 0.0;
  return d;
}

ReorderSection SystemRun::SummarizeReorder(int reorder_every) const {
  ReorderSection x;
  x.every_requests = reorder_every;
  x.passes = reorder_passes;
  x.nodes_reordered = reordered.nodes_reordered;
  x.chunks_written = reordered.chunks_written;
  x.bytes_freed = reordered.bytes_freed;
  x.log_bytes_dropped = reordered.log_bytes_dropped;
  x.housekeeping_failures = reordered.housekeeping_failures;
  x.mapping_bytes = footprint.mapping_bytes;
  x.score_bytes = footprint.score_bytes;
  x.history_bytes = footprint.history_bytes;
  x.chunk_bytes = footprint.chunk_bytes;
  return x;
}

}  // namespace impress
