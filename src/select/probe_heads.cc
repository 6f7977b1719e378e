#include "select/probe_heads.h"

#include <algorithm>

#include "common/named.h"

namespace impress {

const std::vector<std::string>& ProbeLayoutNames() {
  static const std::vector<std::string> names = {"first", "spread"};
  return names;
}

StatusOr<ProbeLayout> ParseProbeLayout(const std::string& name) {
  return ParseNamed<ProbeLayout>(ProbeLayoutNames(), name, "--probe-layout", "layout");
}

std::vector<int64_t> ProbeQueryHeads(int probes, int64_t num_heads, int64_t num_kv_heads, ProbeLayout layout) {
  const int64_t n = std::min<int64_t>(probes, num_heads), g = num_heads / num_kv_heads;
  std::vector<int64_t> heads;
  for (int64_t i = 0; i < n; ++i)
    heads.push_back(layout == ProbeLayout::kFirst ? i : (i % num_kv_heads) * g + i / num_kv_heads);
  return heads;
}

int64_t ProbeKvHeads(const std::vector<int64_t>& heads, int64_t num_heads, int64_t num_kv_heads) {
  const int64_t g = num_heads / num_kv_heads;
  int64_t n = 0;
  for (int64_t h : heads) n = std::max(n, h / g + 1);
  return n;
}

int64_t ProbeKvHeads(int probes, int64_t num_heads, int64_t num_kv_heads, ProbeLayout layout) {
  return ProbeKvHeads(ProbeQueryHeads(probes, num_heads, num_kv_heads, layout), num_heads, num_kv_heads);
}

}  // namespace impress
