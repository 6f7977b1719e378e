// The GPU and CPU chunk caches above the disk tier.
//
// Exclusive: a chunk is in at most one of them; the disk holds every chunk,
// so eviction never writes back. Capacities are bytes and are never exceeded.
// Which chunk goes where is the policy's (policy/placement.h): with LRU or
// LFU a chunk read from disk, or hit in the CPU tier, moves to the GPU tier.
// With IMPRESS's "score" policy (PAPER.md section 3) placement waits for the
// access's important share (Observe), then a chunk moves up only past the
// tier's next victim: a CPU hit replaces the GPU tier's lowest score if it
// beats it (the loser goes down); a disk read lands in the highest tier whose
// lowest score it beats, or in neither. An emulated copy up to the GPU tier
// (TierOptions::h2d_bytes_per_second) waits with no lock held.
// The GPU tier is CUDA memory when LibTorch sees a GPU, otherwise an emulated
// device pool in host memory; the CPU tier is host memory (pinned under CUDA).
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/tier.h"
#include "common/pacer.h"
#include "policy/placement.h"

namespace impress {

// The KV of one (chunk, layer): keys and values [C, kv_heads, head_dim].
struct ChunkKv {
  ChunkKv() = default;
  ChunkKv(at::Tensor keys, at::Tensor values) : k(std::move(keys)), v(std::move(values)) {}
  at::Tensor k, v;
  // On CUDA, for an entry copied up asynchronously: the event after its copy.
  // Whoever reads the entry (Get's caller, a demotion) waits for it on its own
  // stream first, so the copy runs outside the cache lock and nobody reads it early.
  std::shared_ptr<void> ready;
  int64_t bytes() const { return static_cast<int64_t>(k.nbytes() + v.nbytes()); }
};

struct TierOptions {
  int64_t gpu_bytes = 0;
  int64_t cpu_bytes = 0;
  PolicyKind policy = PolicyKind::kLru;
  at::Device gpu_device = at::kCPU;  // kCUDA on a GPU machine; kCPU emulates the pool
  double h2d_bytes_per_second = 0;   // cap on CPU->GPU copies (0: none)
};

struct CacheCounters {
  TierCounts hits;          // per cache tier (GPU, CPU)
  int64_t misses = 0;
  TierCounts bytes_served;  // per tier, including the disk and remote reads the caller reports
};

class TieredCache {
 public:
  static StatusOr<std::unique_ptr<TieredCache>> Create(const TierOptions& opt);

  // Chunk `key`, on the GPU tier's device, or nullopt on a miss. A CPU hit
  // moves the chunk to the GPU tier (the GPU's victims move down to the CPU
  // tier, the CPU's are dropped). `tier` tells where it was found.
  std::optional<ChunkKv> Get(uint64_t key, Tier* tier);
  // Caches a chunk read from disk in the GPU tier (cascading evictions). The
  // score policy holds it until Observe tells its share, then places it.
  void Put(uint64_t key, const ChunkKv& kv);
  // Caches a chunk in tier `top` (or the CPU tier if it does not fit there),
  // whatever the policy: for callers that decide placement themselves.
  void PutIn(uint64_t key, const ChunkKv& kv, Tier top);
  // Where `key` is cached: kGpu, kCpu, or kDisk when in neither.
  Tier Where(uint64_t key) const;
  // Chunks for which `pinned` is true are never evicted (in use by a request).
  void SetPinned(std::function<bool(uint64_t)> pinned) { pinned_ = std::move(pinned); }
  // Counts `bytes` the caller read from a tier below the caches (disk, remote).
  void RecordRead(Tier tier, int64_t bytes);
  // Drops `key` from whichever tier holds it (a chunk no request will read again).
  void Erase(uint64_t key);
  // The policy's input: the share (0..1) of each chunk's tokens the access
  // just made found important; places the chunks that access brought up.
  // No effect unless the policy places on observation (the score policy).
  void Observe(const std::vector<std::pair<uint64_t, double>>& important_shares);
  // `to` inherits what the policy learned of `from`, best first (a
  // reordered copy, most important chunk first). Call before caching `to`.
  void TransferScores(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to);
  // True when Observe does something (callers may skip computing shares otherwise).
  bool wants_observations() const { return placement_->PlacesOnObserve(); }
  // Bytes of the policy's own state (score metadata; 0 under LRU and LFU).
  int64_t score_bytes() const;

  CacheCounters counters() const;
  int64_t used(Tier t) const;
  int64_t capacity(Tier t) const { return t == Tier::kGpu ? opt_.gpu_bytes : opt_.cpu_bytes; }
  bool Contains(uint64_t key, Tier t) const;
  size_t entries(Tier t) const;
  const TierOptions& options() const { return opt_; }

 private:
  struct Level {
    std::unordered_map<uint64_t, ChunkKv> entries;
    std::unique_ptr<CachePolicy> policy;
    int64_t used = 0;
  };
  // Inserts into level `t`, evicting to make room; returns false when it cannot fit.
  bool InsertLocked(int t, uint64_t key, ChunkKv kv);
  // Whether `key` may enter level `t`: room, or the policy admits it past
  // the level's next evictable victim.
  bool AdmitLocked(int t, uint64_t key, int64_t bytes) const;
  bool Cached(uint64_t key) const;  // in any level; REQUIRES: mu_ held
  // Re-ranks `key` wherever it is cached (its policy standing changed). REQUIRES: mu_ held
  void RerankLocked(uint64_t key);
  // Removes `key` from level `t` and returns it. REQUIRES: present
  ChunkKv TakeLocked(int t, uint64_t key);
  // A copy of `kv` in level t's memory. A copy into level 0 from elsewhere
  // adds its bytes to `*h2d` (paced after the lock is released).
  ChunkKv ToTier(const ChunkKv& kv, int t, int64_t* h2d);
  // The emulated host-to-device link: waits for `bytes` at h2d_bytes_per_second.
  void PaceCopy(int64_t bytes);

  TierOptions opt_;
  mutable std::mutex mu_;
  std::vector<Level> levels_;  // kCacheTiers of them, fastest first
  std::function<bool(uint64_t)> pinned_ = [](uint64_t) { return false; };
  std::unique_ptr<Placement> placement_;
  std::unordered_map<uint64_t, ChunkKv> pending_;  // read from disk, awaiting Observe (PlacesOnObserve)
  CacheCounters counters_;
  std::unique_ptr<Pacer> h2d_;  // TierOptions::h2d_bytes_per_second, when set
};

}  // namespace impress
