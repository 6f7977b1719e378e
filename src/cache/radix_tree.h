// Radix tree over token ids at chunk granularity: which prefixes are stored,
// the ids of their chunks, and per node the importance history and reordered
// copy of IMPRESS's KV reordering (docs/paper.md §2). Metadata only; no
// tensors. Not thread-safe: the owner serializes access.
//
// Every edge holds a whole number of chunks (C tokens each); a partial tail
// is never stored. Nodes split at chunk boundaries. Chunk ids are handed out
// in insertion order unless the caller names them, so replaying the same
// inserts (and reorders) rebuilds the same tree.
#pragma once

#include <cstdint>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace impress {

// A node's tokens re-packed into new chunks, per layer in its own order.
struct ReorderedChunks {
  std::vector<uint64_t> chunks;             // as many as the node's own
  std::vector<std::vector<int32_t>> order;  // per layer: stored slot -> token index in the node's label
};

class RadixTree {
 public:
  struct Node {
    uint32_t id = 0;
    Node* parent = nullptr;
    std::vector<int32_t> tokens;   // edge label, a multiple of C tokens
    std::vector<uint64_t> chunks;  // one id per C tokens of the label
    std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;  // keyed by the child's first chunk
    // The reordered copy requests read when they match the whole node; the
    // chunks above stay on disk for partial matches. Replaced, never edited.
    std::shared_ptr<const ReorderedChunks> reordered;
    // Importance history: per layer, summed per-token importance over
    // `history_n` observations (empty until the first).
    std::vector<std::vector<float>> history;
    int64_t history_n = 0;
  };

  struct Match {
    std::vector<uint64_t> chunks;  // ids of the matched chunks, in token order
    std::vector<Node*> path;       // nodes the match runs through (the last possibly in part)
    int64_t tokens() const { return static_cast<int64_t>(chunks.size()) * chunk_tokens; }
    int chunk_tokens = 0;
  };

  explicit RadixTree(int chunk_tokens);

  // Longest stored prefix of `tokens`, in whole chunks.
  Match MatchPrefix(const std::vector<int32_t>& tokens) const;
  // Stores the whole chunks of `tokens`; returns the ids of all its chunks in
  // order. Chunks not stored before get ids first_id, first_id+1, ...
  // (default: next_chunk_id()). REQUIRES: those ids are unused.
  std::vector<uint64_t> Insert(const std::vector<int32_t>& tokens, std::optional<uint64_t> first_id = std::nullopt);
  // Reserves `n` chunk ids that no insert will hand out; returns the first.
  uint64_t ReserveChunkIds(size_t n);
  // Makes later ids start at `id` or above (replaying records that name their ids).
  void AdvanceChunkIds(uint64_t id) { next_chunk_id_ = std::max(next_chunk_id_, id); }

  // The node whose label ends exactly at the end of `path` (root to node), or null.
  Node* FindNode(const std::vector<int32_t>& path) const;
  // Every token from the root to the end of `node`'s label.
  std::vector<int32_t> PathTo(const Node* node) const;
  // Nodes holding at least one chunk, in no particular order.
  std::vector<Node*> Nodes() const;
  // Installs `r` as `node`'s reordered copy (null removes it). The chunk ids
  // it replaces are retired: nothing reads them after the current requests.
  void SetReordered(Node* node, std::shared_ptr<const ReorderedChunks> r);
  // Chunk ids retired since the last call (reordered copies replaced or
  // dropped by a split), for the caches to forget.
  std::vector<uint64_t> TakeRetired() { return std::move(retired_); }
  // Chunks of `tokens` that Insert would add (whole chunks past the match).
  int64_t NewChunks(const std::vector<int32_t>& tokens) const;
  uint64_t next_chunk_id() const { return next_chunk_id_; }

  int chunk_tokens() const { return chunk_tokens_; }
  size_t node_count() const { return nodes_; }
  size_t chunk_count() const { return owner_.size(); }  // including reordered copies

 private:
  std::vector<int32_t> ChunkAt(const std::vector<int32_t>& t, size_t chunk) const;
  void Split(Node* node, size_t keep_chunks);

  int chunk_tokens_;
  Node root_;
  uint64_t next_chunk_id_ = 0;
  uint32_t next_node_id_ = 1;
  size_t nodes_ = 1;
  std::unordered_map<uint64_t, Node*> owner_;  // chunk id -> node holding it (either copy)
  std::vector<uint64_t> retired_;
};

}  // namespace impress
