// A place below the caches that holds chunks' parts: the local disk, a shared
// cluster (docs/design.md, "Backends"). The chunk reader asks the backends in
// order and the first that holds a (chunk, layer) serves it; none of them is
// known to the prefix store beyond this interface.
//
// The local disk is the home backend: it holds the index log, and its commit
// (PrefixStore's) is the unit that survives a crash. Backends below it take
// what the home backend commits (Put) and may hold prefixes it does not
// (Discover), which the index then adopts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/tier.h"
#include "codec/encoded_chunk.h"
#include "common/status.h"
#include "store/chunk_store.h"

namespace impress {

// A prefix's original chunks for a backend: ids[first..] of `tokens` (whole
// chunks from the root; ids[i] is chunk i). `chunks` holds them as the home
// backend stored them, in (layer, chunk) order: entry l * n + i is chunk
// ids[first + i] of layer l, n = ids.size() - first. It owns their parts and
// stays alive until the put is done.
struct PrefixPut {
  std::vector<int32_t> tokens;
  std::vector<uint64_t> ids;
  size_t first = 0;
  std::shared_ptr<const std::vector<EncodedChunk>> chunks;
};

// A reordered copy of the node whose own chunks are `source`, packed by
// `order` into the chunks copy_first.. ; `chunks` as in PrefixPut (n =
// source.size()).
struct CopyPut {
  std::vector<uint64_t> source;
  const std::vector<std::vector<int32_t>>* order = nullptr;
  uint64_t copy_first = 0;
  std::shared_ptr<const std::vector<EncodedChunk>> chunks;
};

class ChunkBackend {
 public:
  virtual ~ChunkBackend() = default;
  // The tier its reads are counted in.
  virtual Tier tier() const = 0;
  // Whether it holds the parts of `chunk` in `layer`.
  virtual bool Holds(uint64_t chunk, int layer) const = 0;
  // Reads the asked parts of every read into its buffers, as one batch.
  // NotFound: a chunk's data is gone or damaged in a way the request recovers
  // from by recomputing; any other error is the run's.
  virtual Status Read(std::vector<ChunkRead>* reads) = 0;
  // Takes `put`; returns at once. `done`, when given, runs once the chunks are
  // written or have failed (perhaps on the calling thread, before Put returns).
  virtual void Put(PrefixPut put, std::function<void(const Status&)> done) {
    if (done) done(Status::InvalidArgument("this backend takes no puts"));
  }
  // The same for a reordered copy.
  virtual void PutCopy(CopyPut put, std::function<void(const Status&)> done) {
    if (done) done(Status::InvalidArgument("this backend takes no copies"));
  }
  // Learns at open that the index holds chunks `ids` of `tokens` (no
  // `chunks`), so that a backend can name them as its peers do.
  virtual void Known(const PrefixPut& prefix) {}
  // The same for a reordered copy (no `chunks`).
  virtual void KnownCopy(const CopyPut& copy) {}
  // How many whole chunks of `tokens` past the first `matched` (the last of
  // which is `parent`, when matched > 0) it holds, from the first. Those it
  // found are then adopted: `adopt(n)` returns the ids the index gave them
  // (an error, or fewer ids, adopts nothing). 0 when it cannot discover.
  // Errors: adopt's.
  virtual StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                                     const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) {
    return int64_t{0};
  }
  // Which of `ids` failed a read here (and were not forgotten since): a
  // request that recomputes them should keep them on the home backend.
  virtual std::vector<uint64_t> Lost(const std::vector<uint64_t>& ids) const { return {}; }
  // Takes `ids` off the failed list (kept elsewhere, or no longer named).
  virtual void ForgetLost(const std::vector<uint64_t>& ids) {}
};

// What a backend below the disk is made from when a store opens
// (PrefixStoreOptions::backends).
struct BackendContext {
  ChunkGeometry geometry;
  std::string fingerprint;  // the store's: model, KV dtype, chunk size
};
using BackendFactory = std::function<StatusOr<std::unique_ptr<ChunkBackend>>(const BackendContext&)>;

// The local disk as a backend (the home one): its reads.
class DiskBackend final : public ChunkBackend {
 public:
  explicit DiskBackend(ChunkStore* disk) : disk_(disk) {}
  Tier tier() const override { return Tier::kDisk; }
  bool Holds(uint64_t chunk, int layer) const override { return disk_->Has(chunk, layer); }
  Status Read(std::vector<ChunkRead>* reads) override { return disk_->Read(reads); }
  // Chunks a read found damaged: the request that recomputes them writes them back (PrefixStore::Heal).
  std::vector<uint64_t> Lost(const std::vector<uint64_t>& ids) const override { return disk_->Damaged(ids); }
  void ForgetLost(const std::vector<uint64_t>& ids) override { disk_->ForgetDamaged(ids); }

 private:
  ChunkStore* disk_;
};

}  // namespace impress
