// The paper's systems and its ablation as one table of recipes (DESIGN.md):
// whether stored prefix KV is reused, which of it each layer loads (the
// selection method), the cache policy of the GPU and CPU tiers, and whether
// KV is reordered by importance.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policy/placement.h"
#include "select/selector.h"

namespace impress {

struct System {
  std::string name;            // one of SystemNames()
  bool reuse = false;          // false: recompute the whole context
  SelectorOptions select;      // which stored prefix KV each layer loads
  PolicyKind policy = PolicyKind::kLru;  // cache policy of the GPU and CPU tiers
  bool reorder = false;        // record importance for KV reordering (the caller runs the reorderer)
};
// recomp, as, h2o-lru, h2o-lfu, impress-itf, impress-itf-ro, impress, and the controls random and static.
const std::vector<std::string>& SystemNames();
// The paper's seven (SystemNames without the controls), in the order its ablation adds IMPRESS's parts.
const std::vector<std::string>& PaperSystemNames();
// The named system with the given retention and IMPRESS alpha.
StatusOr<System> ParseSystem(const std::string& name, double retention = 1.0, double alpha = 0.6);
// Whether the retention changes what `s` computes (every selective system),
// and whether IMPRESS's alpha and agreed-set unit do (systems with probe heads).
bool DependsOnRetention(const System& s);
// Whether `run` serves it from a store: every system but static, whose
// per-prefix importance the store does not keep yet (`eval` runs it).
bool ServedFromStore(const System& s);
bool DependsOnItf(const System& s);

}  // namespace impress
