// Radix tree over token ids at chunk granularity: which prefixes are stored,
// and the ids of their chunks. Metadata only; no tensors.
//
// Every edge holds a whole number of chunks (C tokens each); a partial tail
// is never stored. Nodes split at chunk boundaries. Chunk ids are handed out
// in insertion order, so replaying the same inserts rebuilds the same tree.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace impress {

class RadixTree {
 public:
  struct Node {
    uint32_t id = 0;
    Node* parent = nullptr;
    std::vector<int32_t> tokens;   // edge label, a multiple of C tokens
    std::vector<uint64_t> chunks;  // one id per C tokens of the label
    std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;  // keyed by the child's first chunk
    int lock_ref = 0;              // requests using this node; a locked node's chunks are not evicted
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
  // order. Chunks not stored before get ids next_chunk_id(), next_chunk_id()+1, ...
  std::vector<uint64_t> Insert(const std::vector<int32_t>& tokens);
  // Chunks of `tokens` that Insert would add (whole chunks past the match).
  int64_t NewChunks(const std::vector<int32_t>& tokens) const;
  uint64_t next_chunk_id() const { return next_chunk_id_; }

  void Lock(const Match& m);
  void Unlock(const Match& m);
  // True while a node holding `chunk` is locked.
  bool IsLocked(uint64_t chunk) const;

  int chunk_tokens() const { return chunk_tokens_; }
  size_t node_count() const { return nodes_; }
  size_t chunk_count() const { return owner_.size(); }

 private:
  std::vector<int32_t> ChunkAt(const std::vector<int32_t>& t, size_t chunk) const;
  void Split(Node* node, size_t keep_chunks);

  int chunk_tokens_;
  Node root_;
  uint64_t next_chunk_id_ = 0;
  uint32_t next_node_id_ = 1;
  size_t nodes_ = 1;
  std::unordered_map<uint64_t, Node*> owner_;  // chunk id -> node holding it
};

}  // namespace impress
