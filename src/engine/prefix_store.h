// Prefix KV across the tiers: the radix tree says which prefixes are stored,
// the tiered cache holds some chunks in GPU and CPU memory, and the chunk
// store holds on disk every chunk this machine computed. Owns all three and
// keeps them consistent: the tree is rebuilt from the store's log when it is
// reopened.
//
// With a remote tier (PrefixStoreOptions::remote), new chunks are also
// published to the cluster in the background, and a prefix the tree lacks is
// looked up there: chunks found are adopted into the tree (a log record
// without data) and read from the cluster when the caches miss them. A chunk
// whose remote read fails (missing, damaged, unreachable) fails the read as
// NotFound, so the request recomputes; that recomputation's Insert then keeps
// the chunk on the local disk. Reordered copies of nodes read from the
// cluster are written to the cluster too.
//
// KV reordering (PAPER.md section 2): Reorder() re-packs each node's tokens by
// their historical importance into new chunks, one order per layer, while
// requests keep running. A request reads the version it acquired (old or new,
// never a mix) and gets its KV back in token order.
//
// Thread-safe: Acquire, Release, RecordImportance, Insert and Reorder may run
// on different threads; Fetch and LoadLayer on any thread holding a lease.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/radix_tree.h"
#include "cache/tiered_cache.h"
#include "common/status.h"
#include "engine/load_stream.h"
#include "model/kv_provider.h"
#include "select/probe_heads.h"
#include "remote/content_key.h"
#include "remote/remote_store.h"
#include "store/chunk_store.h"

namespace impress {


class Model;

struct PrefixStoreOptions {
  std::string dir;                  // where the chunk store lives
  int chunk_tokens = 64;
  std::string kv_dtype = "float16"; // float16, bfloat16 or float32 on disk and in the caches
  int probe_heads = 3;              // query heads whose KV heads' keys get a second, contiguous copy
  ProbeLayout probe_layout = ProbeLayout::kFirst;  // which query heads (select/probe_heads.h)
  TierOptions tiers;
  double disk_bytes_per_second = 0; // cap on disk reads (0: none)
  Env* env = nullptr;               // the chunk store's file operations (Env::Default() when null)
  int io_threads = 8;
  // The shared tier below the disk (null: none). Owned by the caller and
  // outliving the store; several stores (processes, machines) may share one cluster.
  RemoteStore* remote = nullptr;
  // Serve the reordered copies an earlier session committed; false starts
  // every node in token order (copies made after opening are still served).
  bool stored_copies = true;
};

// What one layer's load touched.
struct LoadStats {
  int64_t chunks = 0;                // (chunk, layer) pairs served, each counted once
  TierCounts hits;                   // of those, found in a cache tier (GPU, CPU)
  int64_t disk_chunks = 0;           // of those, read (in one or more parts) from disk
  int64_t remote_chunks = 0;         // ... from the remote tier
  TierCounts bytes;                  // served per tier (GPU, CPU, disk, remote)
  LoadStats& operator+=(const LoadStats& o) {
    bytes += o.bytes;
    hits += o.hits;
    chunks += o.chunks;
    disk_chunks += o.disk_chunks;
    remote_chunks += o.remote_chunks;
    return *this;
  }
};

// The stored prefix one request reads, fixed when the request starts: a
// reorder that lands later does not change it, and the chunks it names stay
// on disk. Its chunks are pinned (the caches do not evict them) until Release.
struct PrefixLease {
  RadixTree::Match match;        // the matched prefix in original chunks
  std::vector<uint64_t> chunks;  // what to read, in stored order
  // Per layer: token position -> slot in the concatenation of `chunks`
  // ([P] int64, host); empty when every matched node is in token order.
  std::vector<at::Tensor> slot_of;
  struct Span {
    RadixTree::Node* node;
    int64_t start = 0;   // first token of the node in the matched prefix
    int64_t length = 0;  // tokens of it matched
    bool whole = false;  // the whole node is matched
  };
  std::vector<Span> spans;
  int64_t tokens() const { return match.tokens(); }
  bool reordered() const { return !slot_of.empty(); }
};

struct ReorderOptions {
  int64_t min_history = 1;  // requests a node must have seen to be reordered
  // Rewrite a node only when at least this share of its (token, layer) pairs
  // would move to another chunk: small rank changes are not worth a rewrite
  // (and the cold chunks it makes).
  double min_moved = 0.1;
  // The pass ends by rewriting the store's log (ChunkStore::RewriteLog) when
  // it has grown to `log_growth` times its size after the last rewrite (or
  // the open) and to at least `log_min_bytes`: each replaced copy leaves a
  // dead record of its mapping lists (~330 KB for a 2K-token node on
  // SmolLM2) that every open would read. Doubling keeps the rewrites'
  // cost proportional to what is appended. 0: never.
  double log_growth = 2.0;
  int64_t log_min_bytes = 1 << 20;
};

struct ReorderStats {
  int64_t nodes_examined = 0;
  int64_t nodes_reordered = 0;  // new copies installed
  int64_t chunks_written = 0;   // (chunk, layer) pairs
  int64_t chunks_recached = 0;  // of those, put where the node's cached chunks were
  int64_t bytes_read = 0, bytes_written = 0;
  int64_t bytes_freed = 0;      // disk space of replaced copies given back (FreeRetired)
  int64_t log_bytes_dropped = 0;  // by the log rewrite that ended the pass, if one did
  int64_t housekeeping_failures = 0;  // frees and log rewrites that failed (the next pass retries)
};

// Memory the reordering metadata takes: the mapping lists of installed
// copies and the importance histories.
struct ReorderFootprint {
  int64_t mapping_bytes = 0;
  int64_t history_bytes = 0;
  int64_t score_bytes = 0;  // the score policy's per-chunk scores (0 under LRU and LFU)
  int64_t chunk_bytes = 0;  // KV bytes of every original chunk, for scale
};

class PrefixStore {
 public:
  // Opens or creates the store in opt.dir and rebuilds the tree from its log;
  // stored chunks the tree does not reach (garbage earlier sessions left) are
  // freed. Errors: the chunk store's (another model, a store in use, I/O).
  static StatusOr<std::unique_ptr<PrefixStore>> Open(const Model& model, const PrefixStoreOptions& opt);

  // Keys and values of `chunks` in layer `layer`, in token order, as
  // [num_kv_heads, chunks * C, head_dim] on the model's device and dtype.
  // A chunk that fails its checksum is an error (the caller recomputes).
  Status LoadLayer(const std::vector<uint64_t>& chunks, int layer, at::Tensor* k, at::Tensor* v, LoadStats* stats);

  // Matches `prefix` (at most `max_tokens` of it), locks the matched nodes and
  // names the chunks to read: a wholly matched node's reordered copy when it
  // has one, else its own chunks. Also forgets retired chunks in the caches.
  // With a remote tier, first adopts what the cluster has beyond the local
  // match (Discover).
  PrefixLease Acquire(const std::vector<int32_t>& prefix, int64_t max_tokens);
  void Release(const PrefixLease& lease);
  // [H, P, d] in the lease's stored order -> token order.
  at::Tensor ToTokenOrder(const PrefixLease& lease, int layer, const at::Tensor& stored) const;
  // Token positions (int64, host) -> slots in the lease's stored order.
  at::Tensor SlotsOf(const PrefixLease& lease, int layer, const at::Tensor& positions) const;
  // Adds one request's per-token importance of `layer` ([P] fp32, token
  // order) to the history of every wholly matched node.
  void RecordImportance(const PrefixLease& lease, int layer, const at::Tensor& importance);
  // Re-packs every node with enough history whose importance order changed
  // (durably: a crash keeps either copy). Safe while requests run. The
  // node's cached chunks make way for as many of the copy's, most important
  // first, in the same tiers. Ends with FreeRetired, then rewrites the log if
  // it has grown enough (opt.log_growth); a failure of either is counted in
  // stats, not returned: the next pass retries it.
  Status Reorder(const ReorderOptions& opt, ReorderStats* stats);
  // Frees on disk the chunks of reordered copies that were replaced, dropped
  // by a split or never installed, once no lease names them (a copy a
  // running request reads is freed by a later call, and so is every chunk
  // of a call that fails).
  Status FreeRetired(FreeStats* stats);
  ReorderFootprint Footprint() const;
  // Adopts into the tree the whole chunks of `tokens` past the local match
  // that the remote tier holds (in order, up to the first it lacks), with a
  // log record and no local data. Returns how many; 0 without a remote tier.
  // Errors: the log write.
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens);
  // Stores the whole chunks of `tokens` that the tree does not hold yet,
  // taking their KV from `kv`, whose entry 0 is the token at position
  // `kv_offset` (it must hold those positions), and caches them; with a
  // remote tier, also queues them for the cluster. Matched chunks whose
  // remote read failed are written to the local disk when `kv` holds them.
  // Returns the number of chunks added.
  StatusOr<int64_t> Insert(const std::vector<int32_t>& tokens, const DenseKvCache& kv, int64_t kv_offset = 0);

  // Parts of one (chunk, layer) as a selective load gathers them: [C, heads, d]
  // on the host or the GPU tier's device; undefined until fetched.
  struct Parts {
    at::Tensor k, v, probe;
    Tier tier = Tier::kDisk;  // where its keys and values came from
  };
  // Makes `parts` (bits of ChunkPart) present for every chunk: a cached chunk
  // gives keys and values (and probe keys as a slice of its keys), a missing
  // one is read from disk, only the parts asked for. A chunk whose keys and
  // values have both come from disk is then cached. One batch of disk reads.
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, uint8_t parts, std::vector<Parts>* out,
               LoadStats* stats);
  // The same with the parts asked for per chunk (`parts[i]` for chunks[i]).
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
               std::vector<Parts>* out, LoadStats* stats);
  // Tells the score policy that every token of `chunks` was used (no effect
  // under LRU and LFU). Every load that is not a selection reports this way.
  void ObserveWhole(const std::vector<uint64_t>& chunks, int layer);
  const ChunkGeometry& geometry() const { return geo_; }
  // Chunk parts [C, heads, d] in token order -> [heads, n*C, d] on the
  // model's device and in its dtype.
  at::Tensor StackChunks(const std::vector<at::Tensor>& parts) const;

  // The tree, for single-threaded inspection (tests, stats).
  RadixTree& tree() { return tree_; }
  TieredCache& cache() { return *cache_; }
  ChunkStore& disk() { return *disk_; }
  RemoteStore* remote() const { return opt_.remote; }
  // The stream read-aheads copy to the device on (inactive on the CPU).
  const LoadStream& load_stream() const { return load_stream_; }
  const PrefixStoreOptions& options() const { return opt_; }
  // Bytes one (chunk, layer) takes in the caches: keys + values.
  int64_t chunk_kv_bytes() const;
  static uint64_t CacheKey(uint64_t chunk, int layer) { return (chunk << 12) | static_cast<uint64_t>(layer); }

 private:
  PrefixStore(const Model& model, const PrefixStoreOptions& opt);
  // Installs a reordered copy of the node at `path` if its own chunks are
  // still `source` (a split since makes the copy stale). REQUIRES: mu_ held.
  bool InstallLocked(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                     std::shared_ptr<const ReorderedChunks> copy);
  // Per layer, how many of `ids` are cached in the GPU and the CPU tier; drops them.
  std::vector<std::array<int64_t, 2>> UncacheLocked(const std::vector<uint64_t>& ids);
  void ForgetRetiredLocked();
  // Reads each of `reads` from where its chunk is stored: the local disk,
  // else the remote tier (one batch each). With a remote tier, `from_remote`
  // says which went to the cluster; without one it is left empty.
  Status ReadTiered(const std::vector<ChunkRead>& reads, std::vector<bool>* from_remote);
  // Reads `reads` (parts and buffers set; reads[j] is chunk ids[j]) from the
  // remote tier. A chunk that fails is marked lost; the first failure is
  // returned as NotFound.
  Status ReadRemote(const std::vector<uint64_t>& ids, std::vector<RemoteStore::Read>* reads);
  // Token-major host copies [n*C, heads, d] of `kv`'s keys, values and probe
  // keys of layer `l` for chunks first..first+n-1 (entry 0 of kv at kv_offset).
  std::array<at::Tensor, 3> HostChunks(const DenseKvCache& kv, int l, int64_t first, int64_t n, int64_t kv_offset) const;
  // The content key of chunk `id`, when it has one (original chunks, with a remote tier).
  bool ContentKeyOf(uint64_t id, ContentKey* key) const;
  // Records the content keys of `ids`, the first chunks of `tokens` (from the root), and returns them.
  std::vector<ContentKey> AddContentKeys(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& ids);
  void RecordKeys(const std::vector<uint64_t>& ids, const std::vector<ContentKey>& keys);
  // Chunk i (rows i*C..) of `owner`'s keys, values and probe keys (3 tensors
  // per layer, token-major), as the remote tier publishes it.
  RemoteStore::Chunk RemoteChunk(const std::shared_ptr<const std::vector<at::Tensor>>& owner, int64_t i,
                                 const ContentKey& key, const ContentKey& parent, std::vector<int32_t> tokens) const;
  // Writes to the local disk the chunks of `match` whose remote read failed
  // and whose KV `kv` holds, and drops the reordered copies on its path that
  // failed a remote read. REQUIRES: mu_ held.
  Status KeepLostLocked(const RadixTree::Match& match, const DenseKvCache& kv, int64_t kv_offset);
  // True with a remote tier when none of `ids` is on the local disk.
  bool RemoteOnly(const std::vector<uint64_t>& ids) const;
  // Publishes the reordered copy (chunks first.. of the node whose own chunks
  // are `source`, packed by `order`; `keep` holds its keys, values and probe
  // keys per layer) to the remote tier and waits until it is written.
  Status PublishCopy(const std::vector<uint64_t>& source, const std::vector<std::vector<int32_t>>& order,
                     uint64_t first, const std::vector<at::Tensor>& keep);
  // Queues chunks first.. of `ids` (the chunks of `whole`) for the remote
  // tier; `keep` holds their keys, values and probe keys per layer (3 per layer).
  void Publish(const std::vector<int32_t>& whole, const std::vector<uint64_t>& ids, int64_t first,
               std::vector<at::Tensor> keep);

  const Model& model_;
  PrefixStoreOptions opt_;
  ChunkGeometry geo_;
  at::ScalarType kv_type_;
  // True while a lease names `chunk`: the caches do not evict it.
  bool IsPinned(uint64_t chunk) const;

  mutable std::mutex mu_;  // guards tree_ (its nodes, histories and copies) and unfreed_
  std::vector<uint64_t> unfreed_;  // retired chunk ids still on disk
  std::atomic<uint64_t> log_rewritten_at_{0};  // the log's size after its last rewrite or at open
  // Chunks named by live leases, with counts. A leaf lock: the caches ask
  // under their own lock, so nothing is taken while holding it.
  mutable std::mutex pin_mu_;
  std::unordered_map<uint64_t, int> pinned_;
  RadixTree tree_;
  std::unique_ptr<Env> paced_env_;  // opt.disk_bytes_per_second's wrapper, when set; outlives disk_
  std::unique_ptr<ChunkStore> disk_;
  std::unique_ptr<TieredCache> cache_;
  // With a remote tier: content keys of the tree's original chunks, and the
  // chunks whose remote read failed (kept locally by the next Insert that has them).
  ContentKey root_key_;
  mutable std::mutex keys_mu_;  // a leaf lock over content_ and lost_
  std::unordered_map<uint64_t, ContentKey> content_;
  std::unordered_set<uint64_t> lost_;
  LoadStream load_stream_;
};

// A store fingerprint: architecture, shapes, a checksum of the first MiB of
// the weights, KV dtype and chunk size. A store opened with another is refused.
std::string StoreFingerprint(const Model& model, const std::string& kv_dtype, int chunk_tokens);

}  // namespace impress
