// KV reordering (docs/paper.md §2): re-packs each node's tokens by their
// historical importance into new chunks, one order per layer, while requests
// keep running. Two steps: a plan (a pure function of a node's history, with
// no store), then the repack (read the node's chunks from the backends, write
// the copy, commit, install it, and move the node's cache share to it).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/radix_tree.h"
#include "cache/tiered_cache.h"
#include "common/status.h"
#include "kvstore/chunk_backend.h"
#include "kvstore/backends.h"
#include "kvstore/chunk_reader.h"
#include "kvstore/prefix_index.h"
#include "store/chunk_store.h"

namespace impress {

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

// A node's new packing: per layer, stored slot -> token index in the node,
// most important first (ties in token order), token order inside a chunk;
// `moved` counts the (token, layer) pairs that land in another chunk than
// they are in now.
struct ReorderPlan {
  std::vector<std::vector<int32_t>> order;
  int64_t moved = 0;
};
// The plan for a node of `chunks` chunks of `chunk_tokens` tokens from its
// per-layer summed importance `history`, against its `current` copy (token
// order when null). Uses no LibTorch kernels (it runs beside requests).
ReorderPlan PlanReorder(const std::vector<std::vector<float>>& history, int64_t chunks, int chunk_tokens,
                        const ReorderedChunks* current);

// What a pass works on; all of it outlives the reorderer.
struct ReorderContext {
  PrefixIndex* index;
  ChunkStore* disk;         // the home backend: the copy's chunks and its record
  Backends* backends;       // read the node's chunks; the first below the disk takes a copy kept there
  TieredCache* cache;
  std::mutex* commit_mu;    // orders log records and tree changes
  ChunkGeometry geometry;
  at::ScalarType kv_type;
};

class Reorderer {
 public:
  explicit Reorderer(const ReorderContext& ctx) : ctx_(ctx) {}
  // Re-packs every node with enough history whose order changed (durably: a
  // crash keeps either copy). The node's cached chunks make way for as many
  // of the copy's, most important first, in the same tiers.
  Status Pass(const ReorderOptions& opt, ReorderStats* stats);

 private:
  struct Candidate {
    std::vector<int32_t> path;
    std::vector<uint64_t> source;
    std::vector<std::vector<float>> history;
    std::shared_ptr<const ReorderedChunks> current;
  };
  // Reads the node's chunks and packs them by `order` into chunks first..,
  // encoded for the store (EncodeForStore) in (layer, chunk) order. False
  // (counted) when a chunk is gone from a backend below.
  StatusOr<bool> Repack(const Candidate& cand, const std::vector<std::vector<int32_t>>& order, uint64_t first,
                        std::vector<EncodedChunk>* chunks, ReorderStats* stats);
  // Commits the copy (to the disk, or to the backend below for a node the
  // disk does not hold) and installs it. False when it did not install.
  StatusOr<bool> CommitAndInstall(const Candidate& cand, ReorderPlan& plan, uint64_t first,
                                  const std::shared_ptr<const std::vector<EncodedChunk>>& chunks, ReorderStats* stats);
  // Moves the cache share of the node's old chunks to the copy's most
  // important ones (Repack's `chunks`: decoded, and their bytes under a codec).
  // REQUIRES: the index's mutex held.
  void RecacheLocked(const Candidate& cand, const ReorderedChunks& copy, const std::vector<EncodedChunk>& chunks,
                     ReorderStats* stats);

  ReorderContext ctx_;
};

}  // namespace impress
