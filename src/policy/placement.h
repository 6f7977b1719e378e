// A cache policy as a complete strategy over the tier stack (TieredCache):
// how each tier ranks its entries for eviction, whether an entry may
// displace a tier's next victim, when placement happens, and what the
// strategy learns from accesses. The cache holds no policy-specific code;
// a new policy is one Placement and a row in PolicyNames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "policy/policy.h"

namespace impress {

enum class PolicyKind { kLru, kLfu, kScore };
const std::vector<std::string>& PolicyNames();  // "lru", "lfu", "score": indexed by PolicyKind
StatusOr<PolicyKind> ParsePolicy(const std::string& name);
inline const std::string& PolicyName(PolicyKind k) { return PolicyNames()[static_cast<int>(k)]; }

class Placement {
 public:
  virtual ~Placement() = default;
  // The eviction order of one tier.
  virtual std::unique_ptr<CachePolicy> NewRanking() = 0;
  // An access to `key` (every lookup, hit or miss). True when it changed
  // the key's rank, so that the tiers holding it re-rank it.
  virtual bool Accessed(uint64_t key) { return false; }
  // False: a chunk read from disk goes to the top tier and a lower tier's
  // hit moves up at once. True: both wait for the access's important share
  // (Observed), then go where Admits lets them.
  virtual bool PlacesOnObserve() const { return false; }
  // Whether `key` may enter a full tier whose next victim is `victim`.
  virtual bool Admits(uint64_t key, uint64_t victim) const { return true; }
  // The share (0..1) of key's tokens that an access found important.
  virtual void Observed(uint64_t key, double share) {}
  // `to` inherits what the strategy learned of `from`, best first (a reordered copy).
  virtual void Transfer(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) {}
  // Memory the strategy's own state takes.
  virtual int64_t bytes() const { return 0; }
};

std::unique_ptr<Placement> MakePlacement(PolicyKind kind);

}  // namespace impress
