#include "cache/radix_tree.h"

#include "common/status.h"

namespace impress {

RadixTree::RadixTree(int chunk_tokens) : chunk_tokens_(chunk_tokens) { IMPRESS_CHECK(chunk_tokens > 0); }

std::vector<int32_t> RadixTree::ChunkAt(const std::vector<int32_t>& t, size_t chunk) const {
  return std::vector<int32_t>(t.begin() + chunk * chunk_tokens_, t.begin() + (chunk + 1) * chunk_tokens_);
}

RadixTree::Match RadixTree::MatchPrefix(const std::vector<int32_t>& tokens) const {
  Match m;
  m.chunk_tokens = chunk_tokens_;
  const size_t total = tokens.size() / chunk_tokens_;
  const Node* node = &root_;
  size_t at = 0;  // chunks of `tokens` matched so far
  while (at < total) {
    auto it = node->children.find(ChunkAt(tokens, at));
    if (it == node->children.end()) break;
    const Node* child = it->second.get();
    m.path.push_back(const_cast<Node*>(child));
    size_t k = 0;
    while (k < child->chunks.size() && at < total &&
           std::equal(tokens.begin() + at * chunk_tokens_, tokens.begin() + (at + 1) * chunk_tokens_,
                      child->tokens.begin() + k * chunk_tokens_)) {
      m.chunks.push_back(child->chunks[k]);
      ++k;
      ++at;
    }
    if (k < child->chunks.size()) break;
    node = child;
  }
  return m;
}

int64_t RadixTree::NewChunks(const std::vector<int32_t>& tokens) const {
  return static_cast<int64_t>(tokens.size() / chunk_tokens_) - static_cast<int64_t>(MatchPrefix(tokens).chunks.size());
}

void RadixTree::Split(Node* node, size_t keep) {
  // node keeps its first `keep` chunks; a new child takes the rest and the
  // children. A reordered copy mixes both halves' tokens, so it is dropped;
  // the history splits with the tokens.
  SetReordered(node, nullptr);
  auto tail = std::make_unique<Node>();
  tail->id = next_node_id_++;
  tail->parent = node;
  tail->tokens.assign(node->tokens.begin() + keep * chunk_tokens_, node->tokens.end());
  tail->chunks.assign(node->chunks.begin() + keep, node->chunks.end());
  tail->children = std::move(node->children);
  for (auto& [k, c] : tail->children) c->parent = tail.get();
  for (uint64_t c : tail->chunks) owner_[c] = tail.get();
  const size_t at = keep * chunk_tokens_;
  tail->history_n = node->history_n;
  for (auto& h : node->history) {
    tail->history.emplace_back(h.begin() + at, h.end());
    h.resize(at);
  }
  node->tokens.resize(keep * chunk_tokens_);
  node->chunks.resize(keep);
  node->children.clear();
  node->children[ChunkAt(tail->tokens, 0)] = std::move(tail);
  ++nodes_;
}

std::vector<uint64_t> RadixTree::Insert(const std::vector<int32_t>& tokens, std::optional<uint64_t> first_id) {
  const size_t total = tokens.size() / chunk_tokens_;
  std::vector<uint64_t> ids;
  uint64_t next = first_id.value_or(next_chunk_id_);
  Node* node = &root_;
  size_t at = 0;
  while (at < total) {
    auto key = ChunkAt(tokens, at);
    auto it = node->children.find(key);
    if (it == node->children.end()) {
      auto leaf = std::make_unique<Node>();
      leaf->id = next_node_id_++;
      leaf->parent = node;
      leaf->tokens.assign(tokens.begin() + at * chunk_tokens_, tokens.begin() + total * chunk_tokens_);
      for (; at < total; ++at) {
        leaf->chunks.push_back(next++);
        next_chunk_id_ = std::max(next_chunk_id_, next);
        owner_[leaf->chunks.back()] = leaf.get();
        ids.push_back(leaf->chunks.back());
      }
      node->children[key] = std::move(leaf);
      ++nodes_;
      break;
    }
    Node* child = it->second.get();
    size_t k = 0;
    while (k < child->chunks.size() && at < total &&
           std::equal(tokens.begin() + at * chunk_tokens_, tokens.begin() + (at + 1) * chunk_tokens_,
                      child->tokens.begin() + k * chunk_tokens_)) {
      ids.push_back(child->chunks[k]);
      ++k;
      ++at;
    }
    if (k < child->chunks.size() && at < total) Split(child, k);
    node = child;
  }
  return ids;
}

uint64_t RadixTree::ReserveChunkIds(size_t n) {
  const uint64_t first = next_chunk_id_;
  next_chunk_id_ += n;
  return first;
}

RadixTree::Node* RadixTree::FindNode(const std::vector<int32_t>& path) const {
  if (path.empty() || path.size() % chunk_tokens_ != 0) return nullptr;
  Match m = MatchPrefix(path);
  if (m.tokens() != static_cast<int64_t>(path.size()) || m.path.empty()) return nullptr;
  Node* last = m.path.back();
  return PathTo(last).size() == path.size() ? last : nullptr;
}

std::vector<int32_t> RadixTree::PathTo(const Node* node) const {
  std::vector<const Node*> up;
  for (const Node* n = node; n != nullptr && n != &root_; n = n->parent) up.push_back(n);
  std::vector<int32_t> out;
  for (auto it = up.rbegin(); it != up.rend(); ++it) out.insert(out.end(), (*it)->tokens.begin(), (*it)->tokens.end());
  return out;
}

std::vector<RadixTree::Node*> RadixTree::Nodes() const {
  std::vector<Node*> out;
  std::vector<const Node*> stack = {&root_};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!n->chunks.empty()) out.push_back(const_cast<Node*>(n));
    for (const auto& [k, c] : n->children) stack.push_back(c.get());
  }
  return out;
}

void RadixTree::SetReordered(Node* node, std::shared_ptr<const ReorderedChunks> r) {
  if (node->reordered) {
    for (uint64_t c : node->reordered->chunks) {
      owner_.erase(c);
      retired_.push_back(c);
    }
  }
  node->reordered = std::move(r);
  if (node->reordered)
    for (uint64_t c : node->reordered->chunks) owner_[c] = node;
}

}  // namespace impress
