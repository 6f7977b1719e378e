// Which query heads IMPRESS probes, and which KV heads' keys that reads.
//
// docs/paper.md takes the first 3 heads. On a grouped-query model those share the
// first KV head, so their consensus sees one KV head's keys and is applied
// to all of them (results/accuracy/probe_layout_rte/: on SmolLM2 that
// changes many more answers than H2O does). The spread layout probes one
// query head per KV head instead, at the cost of reading more KV heads' keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// kFirst: query heads 0, 1, 2, ... (the paper). kSpread: one per KV head in
// turn, query heads 0, g, 2g, ... (g query heads per KV head), wrapping to
// 1, g + 1, ... when there are fewer KV heads than probes. On a multi-head
// model (g = 1) both are 0, 1, 2.
enum class ProbeLayout { kFirst, kSpread };
const std::vector<std::string>& ProbeLayoutNames();  // "first", "spread": indexed by ProbeLayout
StatusOr<ProbeLayout> ParseProbeLayout(const std::string& name);

// The probe query heads, in probe order: min(probes, num_heads) of them.
// REQUIRES: num_heads a positive multiple of num_kv_heads.
std::vector<int64_t> ProbeQueryHeads(int probes, int64_t num_heads, int64_t num_kv_heads, ProbeLayout layout);

// The probe heads use KV heads 0 .. n-1 and no others; returns n, the KV heads
// whose keys a store copies for identification.
int64_t ProbeKvHeads(const std::vector<int64_t>& heads, int64_t num_heads, int64_t num_kv_heads);
// The same for the ProbeQueryHeads of (probes, layout).
int64_t ProbeKvHeads(int probes, int64_t num_heads, int64_t num_kv_heads, ProbeLayout layout);

}  // namespace impress
