#include "kvstore/prefix_index.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace impress {

PrefixLease PrefixIndex::AcquireLocked(const std::vector<int32_t>& prefix, int64_t max_tokens) {
  PrefixLease lease;
  lease.match = tree_.MatchPrefix(prefix);
  RadixTree::Match& m = lease.match;
  while (!m.chunks.empty() && m.tokens() > max_tokens) m.chunks.pop_back();
  // Walk the path: each node contributes its matched chunks (all of them, or a leading part).
  const int64_t c = tree_.chunk_tokens();
  std::vector<RadixTree::Node*> path;
  size_t at = 0;  // chunks of the match assigned so far
  bool any_reordered = false;
  for (RadixTree::Node* node : m.path) {
    if (at >= m.chunks.size()) break;
    const size_t take = std::min(node->chunks.size(), m.chunks.size() - at);
    PrefixLease::Span span{node, static_cast<int64_t>(at) * c, static_cast<int64_t>(take) * c,
                           take == node->chunks.size()};
    if (span.whole && node->reordered) {
      lease.chunks.insert(lease.chunks.end(), node->reordered->chunks.begin(), node->reordered->chunks.end());
      any_reordered = true;
    } else {
      lease.chunks.insert(lease.chunks.end(), m.chunks.begin() + at, m.chunks.begin() + at + take);
    }
    lease.spans.push_back(span);
    path.push_back(node);
    at += take;
  }
  m.path = path;
  {
    std::lock_guard<std::mutex> pins(pin_mu_);
    for (uint64_t id : lease.chunks) pinned_[id]++;
  }
  if (!any_reordered) return lease;
  const int64_t p = m.tokens();
  for (int l = 0; l < layers_; ++l) {
    at::Tensor slots = at::empty({p}, at::kLong);
    int64_t* out = slots.data_ptr<int64_t>();
    for (const auto& sp : lease.spans) {
      const auto& r = sp.node->reordered;
      if (sp.whole && r) {
        const auto& order = r->order[l];
        for (size_t s = 0; s < order.size(); ++s) out[sp.start + order[s]] = sp.start + static_cast<int64_t>(s);
      } else {
        for (int64_t t = 0; t < sp.length; ++t) out[sp.start + t] = sp.start + t;
      }
    }
    lease.slot_of.push_back(slots);
  }
  return lease;
}

void PrefixIndex::Release(const PrefixLease& lease) {
  std::lock_guard<std::mutex> pins(pin_mu_);
  for (uint64_t id : lease.chunks)
    if (--pinned_[id] == 0) pinned_.erase(id);
}

bool PrefixIndex::IsPinned(uint64_t chunk) const {
  std::lock_guard<std::mutex> pins(pin_mu_);
  return pinned_.count(chunk) > 0;
}

void PrefixIndex::RecordImportance(const PrefixLease& lease, int layer, const at::Tensor& importance) {
  at::Tensor imp = importance.to(at::kCPU, at::kFloat).contiguous();
  const float* x = imp.data_ptr<float>();
  std::lock_guard<OwnedMutex> lock(mu_);
  for (const auto& sp : lease.spans) {
    RadixTree::Node* node = sp.node;
    // A partial match sees only part of the node (its ranks would be biased);
    // a node split since the lease was taken no longer has this span's shape.
    if (!sp.whole || sp.length != static_cast<int64_t>(node->tokens.size())) continue;
    if (node->history.empty()) node->history.assign(layers_, std::vector<float>(node->tokens.size(), 0.f));
    auto& h = node->history[layer];
    for (int64_t t = 0; t < sp.length; ++t) h[t] += x[sp.start + t];
    if (layer == 0) node->history_n++;
  }
}

std::vector<uint64_t> PrefixIndex::RetireLocked() {
  std::vector<uint64_t> retired = tree_.TakeRetired();
  AddUnfreedLocked(retired);
  return retired;
}

std::vector<uint64_t> PrefixIndex::TakeFreeableLocked() {
  // Retired chunks are out of the tree, so no later lease can pin them.
  std::vector<uint64_t> now, later;
  for (uint64_t c : unfreed_) (IsPinned(c) ? later : now).push_back(c);
  unfreed_ = std::move(later);
  return now;
}

ReorderFootprint PrefixIndex::Footprint(int64_t chunk_bytes) const {
  std::lock_guard<OwnedMutex> lock(mu_);
  ReorderFootprint f;
  for (RadixTree::Node* n : tree_.Nodes()) {
    if (n->reordered)
      for (const auto& o : n->reordered->order) f.mapping_bytes += static_cast<int64_t>(o.size() * sizeof(int32_t));
    for (const auto& h : n->history) f.history_bytes += static_cast<int64_t>(h.size() * sizeof(float));
    f.chunk_bytes += static_cast<int64_t>(n->chunks.size()) * layers_ * chunk_bytes;
  }
  return f;
}

at::Tensor ToTokenOrder(const PrefixLease& lease, int layer, const at::Tensor& stored) {
  if (!lease.reordered()) return stored;
  return stored.index_select(1, lease.slot_of[layer].to(stored.device()));
}

at::Tensor SlotsOf(const PrefixLease& lease, int layer, const at::Tensor& positions) {
  if (!lease.reordered()) return positions;
  return lease.slot_of[layer].index_select(0, positions.cpu());
}

}  // namespace impress
