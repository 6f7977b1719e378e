// The tiers a chunk's KV can be served from, fastest first, and one counter
// per tier: by default the GPU cache, the CPU cache, the local disk store
// and, when configured, the shared remote tier below it (remote/remote_store.h).
#pragma once

#include <array>
#include <cstdint>

namespace impress {

// The tiers, fastest first: kTierNames is their names in this order (the
// JSON's and reports' keys). A new tier is an entry in both; a cache level
// (cache/tiered_cache.h) may be any tier above every backend's.
enum class Tier { kGpu = 0, kCpu = 1, kDisk = 2, kRemote = 3 };
constexpr int kMaxTiers = 4;
constexpr const char* kTierNames[kMaxTiers] = {"gpu", "cpu", "disk", "remote"};
inline const char* TierName(Tier t) { return kTierNames[static_cast<int>(t)]; }
// Every tier, fastest first.
constexpr std::array<Tier, kMaxTiers> kTiers = {Tier::kGpu, Tier::kCpu, Tier::kDisk, Tier::kRemote};

// One count per tier, indexed by Tier or its integer.
class TierCounts {
 public:
  int64_t& operator[](int t) { return n_[t]; }
  int64_t operator[](int t) const { return n_[t]; }
  int64_t& operator[](Tier t) { return n_[static_cast<int>(t)]; }
  int64_t operator[](Tier t) const { return n_[static_cast<int>(t)]; }
  TierCounts& operator+=(const TierCounts& o) {
    for (int i = 0; i < kMaxTiers; ++i) n_[i] += o.n_[i];
    return *this;
  }
  int64_t Total() const {
    int64_t s = 0;
    for (int64_t x : n_) s += x;
    return s;
  }

 private:
  std::array<int64_t, kMaxTiers> n_{};
};

}  // namespace impress
