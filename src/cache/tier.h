// The tiers a chunk's KV can be served from, fastest first, and one counter
// per tier: by default the GPU cache, the CPU cache, the local disk store
// and, when configured, the shared remote tier below it (remote/remote_store.h).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>

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

// The tier every store holds its chunks in (kvstore/store_tiers.h): the
// tiers before it are cache levels, those after it backends below it.
constexpr Tier kHomeTier = Tier::kDisk;
inline bool IsCacheTier(Tier t) { return t < kHomeTier; }
inline bool IsBelowHome(Tier t) { return t > kHomeTier; }

// One value per tier, indexed by Tier or its integer: counts (TierCounts)
// and shares of a whole (TierShares).
template <typename T>
class PerTier {
 public:
  T& operator[](int t) { return v_[t]; }
  T operator[](int t) const { return v_[t]; }
  T& operator[](Tier t) { return v_[static_cast<int>(t)]; }
  T operator[](Tier t) const { return v_[static_cast<int>(t)]; }
  PerTier& operator+=(const PerTier& o) {
    for (int i = 0; i < kMaxTiers; ++i) v_[i] += o.v_[i];
    return *this;
  }
  T Total() const {
    T s{};
    for (T x : v_) s += x;
    return s;
  }

 private:
  std::array<T, kMaxTiers> v_{};
};
using TierCounts = PerTier<int64_t>;
using TierShares = PerTier<double>;

// Counts from (tier, count) pairs; the other tiers 0.
inline TierCounts TierCountsOf(std::initializer_list<std::pair<Tier, int64_t>> counts) {
  TierCounts c;
  for (const auto& [t, n] : counts) c[t] = n;
  return c;
}

// Each tier's count as a share of `whole` (0 where `whole` is 0).
inline TierShares SharesOf(const TierCounts& counts, int64_t whole) {
  TierShares s;
  for (Tier t : kTiers) s[t] = whole > 0 ? static_cast<double>(counts[t]) / static_cast<double>(whole) : 0.0;
  return s;
}

}  // namespace impress
