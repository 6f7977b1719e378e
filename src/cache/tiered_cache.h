// The in-memory chunk caches above the backends: a list of levels, fastest
// first (by default the GPU tier, then the CPU tier: CacheLevels).
//
// Exclusive: a chunk is in at most one level; the backends hold every chunk,
// so eviction never writes back. Capacities are bytes and are never exceeded.
// Which chunk goes where is the policy's (policy/placement.h): with LRU or
// LFU a chunk read from below, or hit in a lower level, moves to the top
// level, and each level's victims move one level down (the last level's are
// dropped). With IMPRESS's "score" policy (docs/paper.md §3) placement
// waits for the access's important share (Observe), then a chunk moves up
// only past a level's next victim: a lower level's hit replaces the top
// level's lowest score if it beats it (the loser goes down); a chunk read
// from below lands in the highest level whose lowest score it beats, or in
// none. An emulated copy into a level (CacheLevel::copy_in_bytes_per_second)
// waits with no lock held. A level on the device is CUDA memory when the
// compute device is a GPU, otherwise an emulated device pool in host memory;
// other levels are host memory (pinned under CUDA when the level says so).
// A chunk may carry its encoded form (the bytes its backend stores, a KV
// codec's): a level that holds encoded chunks keeps only those bytes and
// counts them against its capacity; the others hold decoded KV and keep the
// encoded bytes beside it, in host memory, so that a demotion moves them and
// never re-encodes. A chunk leaving an encoded level for a decoded one, or
// served from it, is decoded there, once (TierOptions::decode); a served
// chunk that its observation then promotes goes up as served, not again.
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/tier.h"
#include "codec/encoded_chunk.h"
#include "codec/kv_codec.h"
#include "common/pacer.h"
#include "policy/placement.h"

namespace impress {

// The KV of one (chunk, layer): keys and values [C, kv_heads, head_dim],
// and its encoded form when it has one: the store's chunk type
// (codec/encoded_chunk.h) holding the keys' and values' bytes as a backend
// with a KV codec stores them (host uint8, `enc.holds_kv()`) and their codec,
// nothing decoded. In a level that holds encoded chunks only `enc` is defined.
struct ChunkKv {
  ChunkKv() = default;
  ChunkKv(at::Tensor keys, at::Tensor values, EncodedChunk encoded = {})
      : k(std::move(keys)), v(std::move(values)), enc(std::move(encoded)) {}
  at::Tensor k, v;
  EncodedChunk enc;
  // On CUDA, for an entry copied asynchronously (up into the GPU tier, or
  // down into pinned memory): the event after its copy. Whoever reads the
  // entry (Get's caller, a promotion or demotion) makes its own stream wait
  // for it first, so the copy runs outside the cache lock and nobody reads it early.
  std::shared_ptr<void> ready;
  // On CUDA, for a chunk just read from below and copied up (k and v on the
  // device): the pinned host tensors it was copied from. A host level takes
  // them instead of copying the KV back down; a device level drops them.
  at::Tensor host_k, host_v;
  // Read from below and already sent up to the compute device by the reader,
  // which paid the host-to-device link for it (RecordRead): its entry into a
  // device level crosses the link no second time.
  bool sent_up = false;
  // What the entry occupies in its level: the decoded KV, or the encoded bytes where only those are held.
  int64_t bytes() const { return k.defined() ? static_cast<int64_t>(k.nbytes() + v.nbytes()) : enc.kv_bytes(); }
};

// One level of the cache.
struct CacheLevel {
  Tier tier = Tier::kGpu;      // its name in counters and reports: any tier (cache/tier.h) above the backends
  bool on_device = false;      // lives on the compute device (an emulated pool on the CPU)
  bool pinned = false;         // host memory pinned when the device is CUDA, for fast copies up
  int64_t capacity = 0;        // bytes, never exceeded
  double copy_in_bytes_per_second = 0;  // emulated cap on the host-to-device link into it (0: none)
  bool encoded = false;        // holds a chunk's encoded form when it has one (host levels only)
};

// One level per cache tier (cache/tier.h's IsCacheTier), fastest first, of
// `bytes[tier]`: the fastest on the device (copies into it capped at
// h2d_bytes_per_second), the others pinned host memory.
std::vector<CacheLevel> CacheLevels(const TierCounts& bytes, double h2d_bytes_per_second = 0);

struct TierOptions {
  std::vector<CacheLevel> levels = CacheLevels({});  // distinct tiers, fastest first (Create checks)
  PolicyKind policy = PolicyKind::kLru;
  at::Device device = at::kCPU;  // the compute device: kCUDA on a GPU machine; kCPU emulates it
  // Sets k and v (the KV dtype, in host memory or on the compute device; on
  // a device with `ready` after the work that made them) from kv->enc, and
  // the bytes they take. Required when a level is encoded. Called with no
  // cache lock held for what Get serves, so possibly from several threads at once.
  std::function<void(ChunkKv* kv)> decode;
  int64_t decoded_bytes = 0;
};

struct CacheCounters {
  TierCounts hits;          // per cache level, by its tier
  int64_t misses = 0;
  TierCounts bytes_served;  // per tier, including the disk and remote reads the caller reports
  // Bytes sent over the host-to-device link: what was read from below
  // (RecordRead) and every copy into the device level from host memory (a
  // lower level's chunk moved up). Each byte that reaches the device crosses once.
  int64_t bytes_up = 0;
};

class TieredCache {
 public:
  static StatusOr<std::unique_ptr<TieredCache>> Create(const TierOptions& opt);

  // Chunk `key`, decoded, on the top level's device, or nullopt on a miss. A
  // lower level's hit moves the chunk to the top (cascading evictions); on a
  // hit `tier` tells where it was found and `bytes` (when given) what it
  // occupied there: the bytes that level served. The served copy is made (and
  // decoded) with no lock held; a hit that left its level meanwhile is served
  // and not moved.
  std::optional<ChunkKv> Get(uint64_t key, Tier* tier, int64_t* bytes = nullptr);
  // Caches a chunk read from below in the first level that takes it
  // (cascading evictions). The score policy holds it until Observe tells its
  // share, then places it.
  void Put(uint64_t key, const ChunkKv& kv);
  // Caches a chunk in the level of tier `top` or the first below it that
  // takes it, whatever the policy: for callers that decide placement themselves.
  void PutIn(uint64_t key, const ChunkKv& kv, Tier top);
  // The tier of the level that caches `key`, or nullopt when none does.
  std::optional<Tier> Where(uint64_t key) const;
  // Chunks for which `pinned` is true are never evicted (in use by a request).
  void SetPinned(std::function<bool(uint64_t)> pinned) { pinned_ = std::move(pinned); }
  // Counts `bytes` the caller read from a tier below the caches (disk,
  // remote) and sent up to the compute device: they cross the device level's
  // link (bytes_up), at its cap when it has one (waited with no lock held), as
  // they would on a GPU. The caller offers those chunks with `sent_up` set.
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
  int64_t capacity(Tier t) const;  // 0 for a tier that is not a level
  bool Contains(uint64_t key, Tier t) const;
  size_t entries(Tier t) const;
  const TierOptions& options() const { return opt_; }

 private:
  struct Level {
    CacheLevel opt;
    std::unordered_map<uint64_t, ChunkKv> entries;
    std::unique_ptr<CachePolicy> policy;
    std::unique_ptr<Pacer> copy_in;  // opt.copy_in_bytes_per_second, when set
    int64_t used = 0;
  };
  // Bytes copied into each level, paced once the lock is released. A level
  // per cache tier at most (Create checks), so a fixed array: no allocation
  // per Get.
  using Copies = std::array<int64_t, kMaxTiers>;
  // Evicts from level `t` (its victims move one level down) until `bytes`
  // more fit; false when they cannot (too large, or the rest is pinned).
  bool MakeRoomLocked(int t, int64_t bytes);
  // Inserts `kv`, already in level t's memory, making room; false when it cannot fit.
  bool InsertLocked(int t, uint64_t key, ChunkKv kv);
  // Inserts a copy of `kv` in level t's memory (ToTier), made only once there
  // is room for it; false when it cannot fit.
  bool CopyInLocked(int t, uint64_t key, const ChunkKv& kv, Copies* copies);
  // The bytes `kv` takes in level t.
  int64_t BytesIn(const ChunkKv& kv, int t) const;
  // Whether `key` may enter level `t`: room, or the policy admits it past
  // the level's next evictable victim.
  bool AdmitLocked(int t, uint64_t key, int64_t bytes) const;
  bool Cached(uint64_t key) const;  // in any level; REQUIRES: mu_ held
  // Re-ranks `key` wherever it is cached (its policy standing changed). REQUIRES: mu_ held
  void RerankLocked(uint64_t key);
  // Removes `key` from level `t` and returns it. REQUIRES: present
  ChunkKv TakeLocked(int t, uint64_t key);
  // Keeps `kv` under `key` in `held` (pending_ or served_) until Observe
  // releases it; at most kMaxHeld entries. REQUIRES: mu_ held.
  static void Hold(std::unordered_map<uint64_t, ChunkKv>* held, uint64_t key, ChunkKv kv);
  static std::optional<ChunkKv> Release(std::unordered_map<uint64_t, ChunkKv>* held, uint64_t key);
  static constexpr size_t kMaxHeld = 1u << 12;
  // The level of tier t, or -1.
  int LevelOf(Tier t) const;
  // A copy of `kv` in level t's memory. A copy from host memory into a level
  // with a capped copy-in adds its bytes to `(*copies)[t]` (null: none). On
  // CUDA copies up and down are only enqueued, on the caller's stream.
  ChunkKv ToTier(const ChunkKv& kv, int t, Copies* copies);
  // Inserts a copy of `kv` into the first level from `top` down that takes it.
  void PlaceLocked(int top, uint64_t key, const ChunkKv& kv, Copies* copies);
  // The emulated links: waits for each level's copied bytes at its cap.
  void PaceCopies(const Copies& copies);

  TierOptions opt_;
  mutable std::mutex mu_;
  std::vector<Level> levels_;  // fastest first; guarded by mu_
  std::function<bool(uint64_t)> pinned_ = [](uint64_t) { return false; };
  std::unique_ptr<Placement> placement_;
  std::unordered_map<uint64_t, ChunkKv> pending_;  // read from below, awaiting Observe; guarded by mu_
  // A lower level's hit as Get served it (decoded, on the device), awaiting
  // Observe: a promotion takes this copy rather than copying and decoding the
  // chunk up again. Guarded by mu_.
  std::unordered_map<uint64_t, ChunkKv> served_;
  CacheCounters counters_;                         // guarded by mu_
};

}  // namespace impress
