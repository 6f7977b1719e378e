// Prefix KV across the tiers, composed: the index (kvstore/prefix_index.h)
// says which prefixes are stored and who reads them, the tiered cache holds
// some chunks in GPU and CPU memory, the chunk reader serves a layer's chunks
// from the cache and then the backends, the local disk is the home backend
// (it holds every chunk this machine computed and the index's log), and the
// backends below it (in PrefixStoreOptions::tiers, such as the shared remote
// tier) take new chunks and may hold prefixes this machine never computed,
// which the index adopts (Discover). The reorderer re-packs nodes by
// importance (kvstore/reorderer.h).
//
// Durability: a record in the disk's log is the unit that survives a crash,
// and the tree is rebuilt from the log on open. Log records are written in
// the order the tree applies them (one commit at a time, commit_mu_), and no
// commit, fsync or backend round trip runs with the index's mutex held.
//
// A chunk whose read fails (damaged on the local disk; missing, damaged or
// unreachable below) fails the read, so the request recomputes it
// (ComputeStoredKv) and Heal writes it back to the local disk, once.
//
// Thread-safe: Acquire, Release, RecordImportance, Insert and Reorder may run
// on different threads; reads on any thread holding a lease.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/radix_tree.h"
#include "cache/tiered_cache.h"
#include "common/status.h"
#include "kvstore/backends.h"
#include "kvstore/chunk_backend.h"
#include "kvstore/chunk_codec.h"
#include "kvstore/chunk_reader.h"
#include "kvstore/load_stream.h"
#include "kvstore/prefix_index.h"
#include "kvstore/reorderer.h"
#include "kvstore/store_identity.h"
#include "kvstore/store_tiers.h"
#include "model/kv_provider.h"
#include "select/probe_heads.h"
#include "store/chunk_store.h"
#include "store/manifest.h"

namespace impress {


class Model;

struct PrefixStoreOptions {
  std::string dir;                  // where the chunk store lives
  int chunk_tokens = 64;
  std::string kv_dtype = "float16"; // float16, bfloat16 or float32 on disk and in the caches
  // How the disk, the host cache levels and the backends below store chunk
  // parts (codec/kv_codec.h); a codec needs float16 KV.
  KvCodec kv_codec = KvCodec::kNone;
  int probe_heads = 3;              // query heads whose KV heads' keys get a second, contiguous copy
  ProbeLayout probe_layout = ProbeLayout::kFirst;  // which query heads (select/probe_heads.h)
  // A new store keeps each chunk's key digest (codec/key_digest.h), for the
  // digest system; an existing store that keeps them is opened with them
  // whatever this says (in their codec, which one set here must match), and
  // one that keeps none is refused when this is set.
  std::optional<DigestCodec> digests;
  // The tiers, fastest first (kvstore/store_tiers.h): the cache levels, the
  // disk, the backends below it (such as the shared remote tier:
  // RemoteBackendFactory), made when the store opens.
  std::vector<StoreTier> tiers = TiersOver(CacheLevels({}));
  PolicyKind policy = PolicyKind::kLru;  // the cache levels' (policy/placement.h)
  double disk_bytes_per_second = 0; // cap on disk reads (0: none)
  Env* env = nullptr;               // the chunk store's file operations (Env::Default() when null)
  int io_threads = 8;
  // Serve the reordered copies an earlier session committed; false starts
  // every node in token order (copies made after opening are still served).
  bool stored_copies = true;
};

// What one Heal wrote back and dropped.
struct HealStats {
  int64_t chunks_written = 0;   // chunks (all their layers) written to the local disk
  int64_t copies_dropped = 0;   // reordered copies dropped for a failed read
};

class PrefixStore {
 public:
  // Opens or creates the store in opt.dir, rebuilds the index from its log
  // and makes the backends below the disk; stored chunks the index does not
  // reach (garbage earlier sessions left) are freed. Errors: the chunk
  // store's (another model, a store in use, I/O), a backend's.
  static StatusOr<std::unique_ptr<PrefixStore>> Open(const Model& model, const PrefixStoreOptions& opt);
  ~PrefixStore();

  // Matches `prefix` (at most `max_tokens` of it), pins the matched chunks and
  // names those to read (PrefixIndex::AcquireLocked); first adopts what the
  // backends below hold beyond the local match (Discover), and forgets
  // retired chunks in the caches.
  PrefixLease Acquire(const std::vector<int32_t>& prefix, int64_t max_tokens);
  void Release(const PrefixLease& lease) { index_.Release(lease); }
  // Adds one request's per-token importance of `layer` to the matched nodes' histories.
  void RecordImportance(const PrefixLease& lease, int layer, const at::Tensor& importance) {
    index_.RecordImportance(lease, layer, importance);
  }
  // One reorder pass (Reorderer::Pass), then FreeRetired, then a log rewrite
  // if the log has grown enough (opt.log_growth); a failure of either is
  // counted in stats, not returned: the next pass retries it.
  Status Reorder(const ReorderOptions& opt, ReorderStats* stats);
  // Frees on disk the chunks of reordered copies that were replaced, dropped
  // by a split or never installed, once no lease names them (a copy a
  // running request reads is freed by a later call, and so is every chunk
  // of a call that fails).
  Status FreeRetired(FreeStats* stats);
  ReorderFootprint Footprint() const;
  // Adopts into the index the whole chunks of `tokens` past the local match
  // that a backend below holds (in order, up to the first it lacks), with a
  // log record and no local data. Returns how many. Errors: the log write.
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens);
  // Stores the whole chunks of `tokens` that the index does not hold yet,
  // taking their KV from `kv`, whose entry 0 is the token at position
  // `kv_offset` (it must hold those positions), caches them and hands them to
  // the backends below. Returns the number of chunks added. The KV must be
  // ComputeStoredKv's for these tokens (request/stored_kv.h): the store holds
  // one KV per prefix. Copies and encoding run outside the commit lock.
  StatusOr<int64_t> Insert(const std::vector<int32_t>& tokens, const DenseKvCache& kv, int64_t kv_offset = 0);
  // After a read failed (ChunkBackend::Lost: damaged on the local disk,
  // missing or damaged below): writes the matched chunks of `tokens` that
  // failed and whose KV `kv` holds (from position 0; ComputeStoredKv's) to the
  // local disk, replacing a damaged local copy (whose space is given back),
  // and drops the reordered copies on the path that failed a read. Later
  // requests read the healed chunks.
  // Errors: the disk's write.
  StatusOr<HealStats> Heal(const std::vector<int32_t>& tokens, const DenseKvCache& kv);

  // Reads (ChunkReader's): a layer's chunks served from the caches, then the
  // backends, and their parts stacked for attention.
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
               std::vector<ChunkParts>* out, LoadStats* stats, DeviceSpans* spans = nullptr) {
    return reader_->Fetch(chunks, layer, parts, out, stats, spans);
  }
  at::Tensor StackChunks(const std::vector<at::Tensor>& parts, const at::Tensor& rows = {}, int64_t heads = 0,
                         int64_t room = 0) const {
    return reader_->StackChunks(parts, rows, heads, room);
  }
  void WarmPinnedPool(int64_t bytes) const { reader_->WarmPinnedPool(bytes); }
  // What requests tell the score policy (TieredCache::Observe,
  // ChunkReader::ObserveWhole); nothing happens when wants_observations() is false.
  bool wants_observations() const { return cache_->wants_observations(); }
  // Whether a cache level holds (chunk, layer) now (no access counted).
  bool Cached(uint64_t chunk, int layer) const { return cache_->Where(ChunkKey{chunk, layer}.packed()).has_value(); }
  void Observe(const std::vector<std::pair<uint64_t, double>>& important_shares) { cache_->Observe(important_shares); }
  void ObserveWhole(const std::vector<uint64_t>& chunks, int layer) { reader_->ObserveWhole(chunks, layer); }
  // The digest of a stored (chunk, layer), resident in host memory
  // (ChunkStore::Digest); undefined where the store keeps none or a chunk
  // lives only below the disk.
  at::Tensor Digest(uint64_t chunk_id, int layer) const { return disk_->Digest(chunk_id, layer); }
  // How many whole chunks of `tokens` the index does not hold yet.
  int64_t NewChunks(const std::vector<int32_t>& tokens) const;
  const ChunkGeometry& geometry() const { return geo_; }
  // The stream read-aheads copy to the device on (inactive on the CPU).
  const LoadStream& load_stream() const { return load_stream_; }
  const PrefixStoreOptions& options() const { return opt_; }
  // Bytes one (chunk, layer) takes in the caches: keys + values.
  int64_t chunk_kv_bytes() const { return static_cast<int64_t>(geo_.KeyBytes() + geo_.ValueBytes()); }

 private:
  friend class PrefixStoreTestPeer;  // tests/store_peer.h: the index, caches and disk, for inspection
  PrefixStore(const Model& model, const PrefixStoreOptions& opt);
  // Open's steps after the disk: the index from the log, garbage freed, the backends below told what it holds.
  Status Recover(const std::vector<std::string>& committed, const std::string& fingerprint);
  // Drops from the caches what the index retired. REQUIRES: index mutex held.
  void ForgetRetiredLocked();
  // Insert's step after its commit: the new chunks into the caches (and to the score policy).
  void CacheInserted(const std::vector<EncodedChunk>& chunks, const std::vector<uint64_t>& added);

  const Model& model_;
  PrefixStoreOptions opt_;
  ChunkGeometry geo_;
  at::ScalarType kv_type_;
  PrefixIndex index_;
  // Serializes commits with the index changes they log, so that the log's
  // order is the tree's. Taken before the index's mutex, never under it.
  std::mutex commit_mu_;
  std::atomic<uint64_t> log_rewritten_at_{0};  // the log's size after its last rewrite or at open
  std::unique_ptr<Env> paced_env_;  // opt.disk_bytes_per_second's wrapper, when set; outlives disk_
  std::unique_ptr<ChunkStore> disk_;
  std::unique_ptr<Backends> backends_;  // the disk, then those below it
  std::unique_ptr<TieredCache> cache_;
  LoadStream load_stream_;
  std::unique_ptr<ChunkReader> reader_;
  std::unique_ptr<Reorderer> reorderer_;
};

}  // namespace impress
