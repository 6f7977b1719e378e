#include "kvstore/store_tiers.h"

#include <string>

namespace impress {

StoreTier CacheTier(const CacheLevel& level) {
  StoreTier t;
  t.tier = level.tier;
  t.level = level;
  return t;
}

StoreTier DiskTier() { return StoreTier{}; }

StoreTier BackendTier(Tier tier, BackendFactory make) {
  StoreTier t;
  t.tier = tier;
  t.backend = std::move(make);
  return t;
}

std::vector<StoreTier> TiersOver(const std::vector<CacheLevel>& levels) {
  std::vector<StoreTier> out;
  for (const CacheLevel& l : levels) out.push_back(CacheTier(l));
  out.push_back(DiskTier());
  return out;
}

Status SplitTiers(const std::vector<StoreTier>& tiers, std::vector<CacheLevel>* levels,
                  std::vector<const StoreTier*>* below) {
  bool disk = false;
  for (const StoreTier& t : tiers) {
    const std::string name = TierName(t.tier);
    if (t.level) {
      if (disk || !IsCacheTier(t.tier) || t.level->tier != t.tier)
        return Status::InvalidArgument("cache level '" + name + "' is not above the disk");
      levels->push_back(*t.level);
    } else if (t.backend) {
      if (!disk || !IsBelowHome(t.tier)) return Status::InvalidArgument("backend '" + name + "' is not below the disk");
      below->push_back(&t);
    } else if (t.tier != kHomeTier) {
      return Status::InvalidArgument("tier '" + name + "' is neither a cache level nor a backend");
    } else if (disk) {
      return Status::InvalidArgument("the tier list names the disk twice");
    } else {
      disk = true;
    }
  }
  if (!disk) return Status::InvalidArgument("the tier list has no disk");
  return Status::OK();
}

}  // namespace impress
