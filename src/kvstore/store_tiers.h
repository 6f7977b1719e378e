// The store's tiers as one list, fastest first: the cache levels, the local
// disk (the home backend, in every store, once), then the backends below
// it. Each entry is named by its tier (cache/tier.h); what it is follows
// from which side of the disk it stands on.
#pragma once

#include <optional>
#include <vector>

#include "cache/tiered_cache.h"
#include "common/status.h"
#include "kvstore/chunk_backend.h"

namespace impress {

struct StoreTier {
  Tier tier = Tier::kDisk;
  std::optional<CacheLevel> level;  // a cache level (above the disk)
  BackendFactory backend;           // a backend below the disk, made when the store opens
};

StoreTier CacheTier(const CacheLevel& level);
StoreTier DiskTier();
// A backend below the disk; the backend it makes must report `tier`.
StoreTier BackendTier(Tier tier, BackendFactory make);

// `levels` over the disk, nothing below it.
std::vector<StoreTier> TiersOver(const std::vector<CacheLevel>& levels);

// The list's cache levels and its backends below the disk, in order,
// appended to `levels` and `below`.
// InvalidArgument, naming the entry: no disk or a second one, a cache level
// not above the disk, a backend not below it, an entry that is neither.
Status SplitTiers(const std::vector<StoreTier>& tiers, std::vector<CacheLevel>* levels,
                  std::vector<const StoreTier*>* below);

}  // namespace impress
