// The report `impress run` prints for one RunSystems result: its
// configuration, the systems' table, then the sections a run has only when
// something happened in it (selection parts, the remote tier, damage met,
// speculation, reordering, Fig. 19's per-layer loads).
#include <string>

#include "common/named.h"
#include "common/units.h"
#include "experiment/run_systems.h"

namespace impress {
namespace {

std::string Size(double bytes) {
  if (bytes <= 0) return "off";
  char buf[32];
  if (bytes >= (1 << 30)) std::snprintf(buf, sizeof buf, "%.3gG", bytes / (1 << 30));
  else if (bytes >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.3gM", bytes / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.3gK", bytes / 1024);
  return buf;
}

long long LL(int64_t v) { return static_cast<long long>(v); }


void PrintConfiguration(const RunResults& result, std::FILE* out) {
  const RunConfig& c = result.config;
  std::fprintf(out, "model %s, task %s, pool %d x %d tokens, %d requests (+%d warm-up), chunk %d, kv %s\n",
               result.model.empty() ? "?" : result.model.c_str(), c.task.c_str(), c.pool, c.prefix_tokens, c.requests,
               c.warmup, c.chunk, c.kv_dtype.c_str());
  std::string caches;  // "gpu 32M (CUDA), cpu 64M": the fastest level is the device's
  for (Tier t : kTiers) {
    if (!IsCacheTier(t)) continue;
    caches += (caches.empty() ? "" : ", ") + std::string(TierName(t)) + " " + Size(static_cast<double>(c.cache_bytes[t]));
    if (t == kTiers[0]) caches += result.device == "cuda" ? " (CUDA)" : " (emulated in host memory)";
  }
  const std::string ahead = c.read_ahead != 1 ? "; reads " + std::to_string(c.read_ahead) + " layers ahead" : "";
  std::fprintf(out, "caches: %s; disk cap %s, h2d cap %s; KV %lld bytes/token; retention %.3g, alpha %.3g, ITF unit %s, probe heads %s%s%s%s\n\n",
               caches.c_str(), Size(c.disk_bw).c_str(), Size(c.h2d_bw).c_str(), static_cast<long long>(result.kv_bytes_per_token),
               c.select.retention, c.select.alpha, NameOf(ItfUnitNames(), c.select.unit).c_str(),
               NameOf(ProbeLayoutNames(), c.select.probe_layout).c_str(), c.prefetch ? "" : "; no prefetch",
               SpeculationModeOf(c.speculate).report, ahead.c_str());
}

// Bytes from each tier down to the home one, hits in each cache tier, and
// the chunks read from the home tier (the remote tier has its own section).
void PrintSystemsTable(const RunResults& result, std::FILE* out) {
  const char* fastest = TierName(kTiers[0]);
  std::string head = "| system | policy | ttft mean ms | p50 | p99 | io mean ms | io share | select ms |";
  for (Tier t : kTiers)
    if (!IsBelowHome(t)) head += std::string(" MB ") + TierName(t) + " |";
  for (Tier t : kTiers)
    if (IsCacheTier(t)) head += std::string(" hit ") + TierName(t) + " |";
  head += std::string(" chunks loaded | from ") + TierName(kHomeTier) + " | KV chunks/req | KV hit " + fastest +
          " | kept | fallback | acc |";
  std::fprintf(out, "%s\n|", head.c_str());
  for (size_t i = 1; i < head.size(); ++i)
    if (head[i] == '|') std::fprintf(out, "---|");
  std::fprintf(out, "\n");
  for (const RunResult& r : result.runs) {
    std::string row = Fmt("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f |", r.system.c_str(), r.policy.c_str(),
                          r.ttft_ms.mean, r.ttft_ms.p50, r.ttft_ms.p99, r.io_ms_mean, r.io_share, r.select_ms_mean);
    for (Tier t : kTiers)
      if (!IsBelowHome(t)) row += Fmt(" %.1f |", r.bytes_read[t] / 1e6);
    for (Tier t : kTiers)
      if (IsCacheTier(t)) row += Fmt(" %.2f |", r.hit_rate[t]);
    row += Fmt(" %lld | %lld | %.1f | %.2f | %.3f | %.3f | %.3f |", LL(r.chunk_loads), LL(r.chunks_read[kHomeTier]),
               r.kv_chunks_per_request, r.kv_hit_rate[kTiers[0]], r.kept_share, r.fallback_share, r.acc);
    std::fprintf(out, "%s\n", row.c_str());
  }
  std::string repeated;
  for (const RunResult& r : result.runs)
    if (r.repeated) repeated += (repeated.empty() ? "" : ", ") + r.system;
  if (!repeated.empty())
    std::fprintf(out, "\nrepeated from an earlier point of the sweep, which it does not depend on: %s\n", repeated.c_str());
}

// Selection time in its parts, for the systems that spend any.
void PrintSelectionParts(const RunResults& result, std::FILE* out) {
  bool selects = false;
  for (const RunResult& r : result.runs) selects |= r.select_ms_mean > 0;
  if (!selects) return;
  std::fprintf(out, "\nselection per request (ms): importance, deciding (top-k, trust test, agreed set), gathering (chunks into tensors); "
                    "beside it, the cache policy placing chunks on what was used (not selection)\n");
  std::fprintf(out, "| system | select ms | importance | decision | gather | select share of ttft | placement ms |\n|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : result.runs) {
    if (r.select_ms_mean <= 0) continue;
    const SelectParts& p = r.select_parts;
    std::fprintf(out, "| %s | %.1f | %.1f | %.1f | %.1f | %.3f | %.1f |\n", r.system.c_str(), r.select_ms_mean,
                 p.importance_ms, p.decision_ms, p.gather_ms,
                 r.ttft_ms.mean > 0 ? r.select_ms_mean / r.ttft_ms.mean : 0.0, r.placement_ms_mean);
  }
}

// The remote tier: what each system read from it, its faults, and what
// opening the store adopted from it instead of computing.
void PrintRemote(const RunResults& result, std::FILE* out) {
  const RunConfig& c = result.config;
  if (c.remote.empty()) return;
  std::fprintf(out, "\nremote tier %s (read cap %s):\n", c.remote.c_str(), Size(c.remote_bw).c_str());
  std::fprintf(out, "| system | MB remote | chunks from remote | parts missing | corrupt | read errors | recomputed requests | adopted chunks | computed prefixes | chunks published | MOVED | ASK | slot reloads | reconnects | timeouts |\n");
  std::fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : result.runs) {
    if (!r.remote || !r.fill) continue;  // systems that do not reuse KV
    const RemoteTally& x = *r.remote;
    std::fprintf(out, "| %s | %.1f | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld |\n",
                 r.system.c_str(), r.bytes_read[Tier::kRemote] / 1e6, LL(r.chunks_read[Tier::kRemote]), LL(x.parts_missing),
                 LL(x.parts_corrupt), LL(x.read_errors), LL(r.recomputed_after_error), LL(r.fill->adopted_chunks),
                 LL(r.fill->computed_prefixes), LL(x.chunks_written), LL(x.moved), LL(x.ask), LL(x.slot_reloads),
                 LL(x.reconnects), LL(x.timeouts));
  }
}

// Damage met (requests that recomputed a stored chunk, and the chunks they
// wrote back) and speculative K/V reads (how many, and how many selection
// then needed).
void PrintDamageAndSpeculation(const RunResults& result, std::FILE* out) {
  for (const RunResult& r : result.runs) {
    if (r.recomputed_after_error == 0 && r.healed_chunks == 0) continue;
    std::fprintf(out, "\n%s: %lld requests met damaged or missing chunks; %lld chunks recomputed and written back\n",
                 r.system.c_str(), LL(r.recomputed_after_error), LL(r.healed_chunks));
  }
  for (const RunResult& r : result.runs) {
    if (r.speculated_chunks_per_request <= 0) continue;
    std::fprintf(out, "\n%s speculative K/V: %.1f (chunk, layer) pairs read ahead per request, %.1f%% of them needed\n",
                 r.system.c_str(), r.speculated_chunks_per_request, 100.0 * r.speculated_used_share);
  }
  for (const RunResult& r : result.runs) {
    int64_t digest = 0, disk = 0;
    for (const RequestRow& x : r.per_request) digest += x.digest_bytes, disk += x.bytes[kHomeTier];
    if (digest <= 0 || r.per_request.empty()) continue;
    const double n = static_cast<double>(r.per_request.size());
    std::fprintf(out, "\n%s: %.1f MB of resident key digests scored per request (host memory), beside %.1f MB read from disk\n",
                 r.system.c_str(), static_cast<double>(digest) / n / 1e6, static_cast<double>(disk) / n / 1e6);
  }
}

// Reordering: what it rewrote, and its metadata against the chunks it describes.
void PrintReordering(const RunResults& result, std::FILE* out) {
  for (const RunResult& r : result.runs) {
    if (!r.reorder) continue;
    const ReorderSection& f = *r.reorder;
    const double cb = f.chunk_bytes > 0 ? static_cast<double>(f.chunk_bytes) : 1.0;
    std::fprintf(out, "\n%s reordering: %lld passes, %lld node copies installed, %lld (chunk, layer) pairs written, "
                 "%.1f MB of replaced copies freed and %.1f MB of their log records dropped; "
                 "mapping lists %.3f%%, scores %.3f%% and importance history %.3f%% of chunk bytes\n",
                 r.system.c_str(), LL(f.passes), LL(f.nodes_reordered), LL(f.chunks_written), f.bytes_freed / 1e6,
                 f.log_bytes_dropped / 1e6, 100.0 * f.mapping_bytes / cb, 100.0 * f.score_bytes / cb,
                 100.0 * f.history_bytes / cb);
    if (f.housekeeping_failures > 0)
      std::fprintf(out, "%s reordering: %lld frees or log rewrites failed (a full disk?); later passes retried them\n",
                   r.system.c_str(), LL(f.housekeeping_failures));
  }
}

// Fig. 19: per layer, the share of the prefix's chunks whose K/V were loaded
// and of IMPRESS probe tests that fell back.
void PrintLayers(const RunResults& result, std::FILE* out) {
  for (const RunResult& r : result.runs) {
    if (r.kept_share >= 1.0) continue;
    std::fprintf(out, "\n%s per layer (KV chunks loaded / fallback share):", r.system.c_str());
    for (size_t l = 0; l < r.layer_kv_load_ratio.size(); ++l)
      std::fprintf(out, "%s L%zu %.2f/%.2f", l % 6 == 0 ? "\n " : "", l, r.layer_kv_load_ratio[l],
                   r.layer_fallback_share[l]);
    std::fprintf(out, "\n");
  }
}

}  // namespace

void PrintRunHeadline(const RunResults& result, std::FILE* out) {
  const RunConfig& c = result.config;
  const RunResult* base = nullptr;  // the paper's strongest baseline when it ran, else the first system
  for (const RunResult& r : result.runs)
    if (r.system == system_name::kH2oLfu) base = &r;
  if (base == nullptr && !result.runs.empty()) base = &result.runs.front();
  std::fprintf(out, "%s, %d prefixes of %d tokens, %d requests, retention %.3g, ITF unit %s, disk cap %s\n",
               c.task.c_str(), c.pool, c.prefix_tokens, c.requests, c.select.retention,
               NameOf(ItfUnitNames(), c.select.unit).c_str(), Size(c.disk_bw).c_str());
  std::fprintf(out, "| system | ttft mean ms | p99 | mean vs %s | MB from disk | acc |\n|---|---|---|---|---|---|\n",
               base ? base->system.c_str() : "-");
  for (const RunResult& r : result.runs)
    std::fprintf(out, "| %s | %.1f | %.1f | %.2fx | %.1f | %.3f |\n", r.system.c_str(), r.ttft_ms.mean, r.ttft_ms.p99,
                 r.ttft_ms.mean > 0 ? base->ttft_ms.mean / r.ttft_ms.mean : 0.0, r.bytes_read[Tier::kDisk] / 1e6, r.acc);
}

void PrintRunReport(const RunResults& result, std::FILE* out) {
  PrintConfiguration(result, out);
  PrintSystemsTable(result, out);
  PrintSelectionParts(result, out);
  PrintRemote(result, out);
  PrintDamageAndSpeculation(result, out);
  PrintReordering(result, out);
  PrintLayers(result, out);
}

}  // namespace impress
