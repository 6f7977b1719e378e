// The GPU and CPU chunk caches above the disk tier.
//
// Exclusive: a chunk is in at most one of them; the disk holds every chunk,
// so eviction never writes back. Capacities are bytes and are never exceeded.
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

#include <ATen/core/Tensor.h>

#include "policy/policy.h"

namespace impress {

// The KV of one (chunk, layer): keys and values [C, kv_heads, head_dim].
struct ChunkKv {
  at::Tensor k, v;
  int64_t bytes() const { return static_cast<int64_t>(k.nbytes() + v.nbytes()); }
};

enum class Tier { kGpu = 0, kCpu = 1, kDisk = 2 };

struct TierOptions {
  int64_t gpu_bytes = 0;
  int64_t cpu_bytes = 0;
  std::string policy = "lru";
  at::Device gpu_device = at::kCPU;  // kCUDA on a GPU machine; kCPU emulates the pool
  double h2d_bytes_per_second = 0;   // cap on CPU->GPU copies (0: none)
};

struct CacheCounters {
  int64_t hits[2] = {0, 0};    // per tier (GPU, CPU)
  int64_t misses = 0;
  int64_t bytes_served[3] = {0, 0, 0};  // per tier, including disk reads reported by the caller
};

class TieredCache {
 public:
  static StatusOr<std::unique_ptr<TieredCache>> Create(const TierOptions& opt);

  // Chunk `key`, on the GPU tier's device, or nullopt on a miss. A CPU hit
  // moves the chunk to the GPU tier (the GPU's victims move down to the CPU
  // tier, the CPU's are dropped). `tier` tells where it was found.
  std::optional<ChunkKv> Get(uint64_t key, Tier* tier);
  // Caches a chunk read from disk in the GPU tier (cascading evictions), or
  // from the CPU tier down when `top` is kCpu.
  void Put(uint64_t key, const ChunkKv& kv, Tier top = Tier::kGpu);
  // Where `key` is cached: kGpu, kCpu, or kDisk when in neither.
  Tier Where(uint64_t key) const;
  // Chunks for which `pinned` is true are never evicted (in use by a request).
  void SetPinned(std::function<bool(uint64_t)> pinned) { pinned_ = std::move(pinned); }
  void RecordDiskRead(int64_t bytes);
  // Drops `key` from whichever tier holds it (a chunk no request will read again).
  void Erase(uint64_t key);

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
  ChunkKv ToTier(const ChunkKv& kv, int t);

  TierOptions opt_;
  mutable std::mutex mu_;
  Level levels_[2];
  std::function<bool(uint64_t)> pinned_ = [](uint64_t) { return false; };
  CacheCounters counters_;
};

}  // namespace impress
