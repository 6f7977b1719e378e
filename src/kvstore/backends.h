// The backends in the order reads ask them: the home backend (the local
// disk) first, then those below it, as the store's tier list names them
// (kvstore/store_tiers.h). The first that holds a (chunk, layer) serves it;
// the last takes what none holds, and reports it. Thread-safe as its
// backends are.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "cache/radix_tree.h"
#include "common/status.h"
#include "kvstore/chunk_backend.h"
#include "kvstore/store_tiers.h"

namespace impress {

class Backends {
 public:
  // The disk as the home backend and one backend made from each of `below`
  // (SplitTiers'). Errors: a factory's; a backend that reports another tier
  // than its entry names.
  static StatusOr<std::unique_ptr<Backends>> Make(ChunkStore* disk, const std::vector<const StoreTier*>& below,
                                                  const BackendContext& ctx);

  // Reads `reads`, each from the first backend that holds it, one batch per
  // backend. `tiers`, when given, gets each read's tier.
  Status Read(std::vector<ChunkRead>* reads, std::vector<Tier>* tiers);
  // The first backend below the disk, or null.
  ChunkBackend* first_below() const { return below_.empty() ? nullptr : below_.front().get(); }
  bool has_below() const { return !below_.empty(); }

  // Tells every backend below what the index holds (ChunkBackend::Known,
  // KnownCopy): each node's chunks, and the reordered copies this machine
  // keeps below rather than on its disk.
  void TellKnown(RadixTree& tree) const;
  // Hands a prefix's new chunks to every backend below.
  void PutBelow(const PrefixPut& put) const;
  // Adopts through the first backend below that finds chunks of `tokens`
  // past the local match (ChunkBackend::Discover); 0 when none does.
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                             const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) const;

  // Whether any of `ids` failed a read anywhere; they are forgotten as failed.
  bool FailedAnywhere(const std::vector<uint64_t>& ids);
  // Which of `ids` failed a read and must be kept on the home backend: a
  // damaged local copy, or a chunk lost below that the disk does not hold.
  std::set<uint64_t> ToKeepHome(const std::vector<uint64_t>& ids) const;
  void ForgetLost(const std::vector<uint64_t>& ids);

 private:
  explicit Backends(ChunkStore* disk) : disk_(disk), home_(disk), order_{&home_} {}

  ChunkStore* disk_;
  DiskBackend home_;
  std::vector<std::unique_ptr<ChunkBackend>> below_;
  std::vector<ChunkBackend*> order_;  // home_, then below_, as reads ask them
};

}  // namespace impress
