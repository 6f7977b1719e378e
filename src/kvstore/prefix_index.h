// Which prefixes the store holds and who is reading them: the radix tree
// (chunk ids, importance histories, reordered copies), the leases requests
// hold with the pins that keep their chunks in the caches, and the chunks
// retired from the tree that are still on disk. Metadata only: no I/O, and
// nothing slow runs under its mutex (the store commits to disk and asks the
// backends with it released).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/radix_tree.h"
#include "common/owned_mutex.h"

namespace impress {

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

// Memory the reordering metadata takes: the mapping lists of installed
// copies and the importance histories.
struct ReorderFootprint {
  int64_t mapping_bytes = 0;
  int64_t history_bytes = 0;
  int64_t score_bytes = 0;  // the score policy's per-chunk scores (0 under LRU and LFU)
  int64_t chunk_bytes = 0;  // KV bytes of every original chunk, for scale
};

class PrefixIndex {
 public:
  PrefixIndex(int chunk_tokens, int layers) : tree_(chunk_tokens), layers_(layers) {}

  // Guards the tree (its nodes, histories and copies) and the unfreed list.
  OwnedMutex& mu() const { return mu_; }
  // REQUIRES: mu() held, or no other thread using the index (open, tests).
  RadixTree& tree() { return tree_; }
  const RadixTree& tree() const { return tree_; }

  // Matches `prefix` (at most `max_tokens` of it) and names the chunks to
  // read: a wholly matched node's reordered copy when it has one, else its
  // own chunks; pins them. REQUIRES: mu() held.
  PrefixLease AcquireLocked(const std::vector<int32_t>& prefix, int64_t max_tokens);
  void Release(const PrefixLease& lease);
  // True while a lease names `chunk`. Takes only the pins' leaf lock.
  bool IsPinned(uint64_t chunk) const;
  // Adds one request's per-token importance of `layer` ([P] fp32 host, token
  // order) to the history of every wholly matched node. Takes mu().
  void RecordImportance(const PrefixLease& lease, int layer, const at::Tensor& importance);

  // Moves the tree's retired chunk ids to the unfreed list; returns them.
  // REQUIRES: mu() held.
  std::vector<uint64_t> RetireLocked();
  // Unfreed chunks no lease names: taken off the list. REQUIRES: mu() held.
  std::vector<uint64_t> TakeFreeableLocked();
  // Puts chunks (back) on the unfreed list. REQUIRES: mu() held.
  void AddUnfreedLocked(const std::vector<uint64_t>& ids) { unfreed_.insert(unfreed_.end(), ids.begin(), ids.end()); }
  // The mapping and history bytes, and the KV bytes of every original chunk
  // at `chunk_bytes` per (chunk, layer) (score_bytes left 0). Takes mu().
  ReorderFootprint Footprint(int64_t chunk_bytes) const;

 private:
  mutable OwnedMutex mu_;
  RadixTree tree_;                 // GUARDED_BY(mu_)
  std::vector<uint64_t> unfreed_;  // GUARDED_BY(mu_): retired chunk ids still on disk
  int layers_;
  // Chunks named by live leases, with counts. A leaf lock: the caches ask
  // under their own lock, so nothing is taken while holding it.
  mutable std::mutex pin_mu_;
  std::unordered_map<uint64_t, int> pinned_;  // GUARDED_BY(pin_mu_)
};

// [H, P, d] in the lease's stored order -> token order.
at::Tensor ToTokenOrder(const PrefixLease& lease, int layer, const at::Tensor& stored);
// Token positions (int64, host) -> slots in the lease's stored order.
at::Tensor SlotsOf(const PrefixLease& lease, int layer, const at::Tensor& positions);

}  // namespace impress
