// The paper's systems, its ablation and the controls as one registry (DESIGN.md):
// whether stored prefix KV is reused, which of it each layer loads (the
// selection method), the cache policy of the GPU and CPU tiers, whether KV is
// reordered by importance, and the properties callers ask of a system.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policy/placement.h"
#include "select/selector.h"

namespace impress {

struct System {
  std::string name;            // one of SystemNames()
  bool paper = false;          // one of the paper's seven; false: a control (random, static)
  bool reuse = false;          // false: recompute the whole context
  SelectorOptions select;      // which stored prefix KV each layer loads
  PolicyKind policy = PolicyKind::kLru;  // cache policy of the GPU and CPU tiers
  bool reorder = false;        // record importance for KV reordering (the caller runs the reorderer)
  // Whether `run` serves it from a store: every system but static, whose
  // per-prefix importance the store does not keep yet (`eval` runs it).
  bool served_from_store = true;
  bool depends_on_retention = false;  // the retention changes what it computes (every selective system)
  // It ranks by probe heads: IMPRESS's alpha, agreed-set unit and probe layout change what it computes.
  bool uses_probe_heads = false;
  // It scores chunks by their key digests: its store must keep them (PrefixStoreOptions::digests).
  bool reads_digests = false;
};

// The registry's names, for code that picks a system by name (figures,
// defaults, benchmarks); systems.cc is the one place each is spelled.
namespace system_name {
extern const char kRecomp[], kAs[], kH2oLru[], kH2oLfu[], kImpressItf[], kImpressItfRo[], kImpress[], kRandom[],
    kStatic[], kDigest[];
}  // namespace system_name

// Every system, in the registry's order (the paper's seven in the order its
// ablation adds IMPRESS's parts, then the controls), at retention 1 and alpha 0.6.
const std::vector<System>& Systems();
const std::vector<std::string>& SystemNames();
// The paper's seven (SystemNames without the controls).
const std::vector<std::string>& PaperSystemNames();
// Whether any of the named systems reads digests (unknown names count as not).
bool AnyReadsDigests(const std::vector<std::string>& names);
// The named system selecting with `select`'s knobs and its own kind.
// Errors: an unknown name; an importance pool that is not an odd number >= 1.
StatusOr<System> ParseSystem(const std::string& name, const SelectorOptions& select);
// The named system with the given retention and IMPRESS alpha, every other knob its default.
StatusOr<System> ParseSystem(const std::string& name, double retention = 1.0, double alpha = 0.6);

}  // namespace impress
