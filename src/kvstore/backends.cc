#include "kvstore/backends.h"

#include <string>

namespace impress {

StatusOr<std::unique_ptr<Backends>> Backends::Make(ChunkStore* disk, const std::vector<const StoreTier*>& below,
                                                   const BackendContext& ctx) {
  std::unique_ptr<Backends> b(new Backends(disk));
  for (const StoreTier* t : below) {
    ASSIGN_OR_RETURN(std::unique_ptr<ChunkBackend> made, t->backend(ctx));
    if (made->tier() != t->tier)
      return Status::InvalidArgument(std::string("backend '") + TierName(t->tier) + "' reports tier '" +
                                     TierName(made->tier()) + "'");
    b->order_.push_back(made.get());
    b->below_.push_back(std::move(made));
  }
  return b;
}

Status Backends::Read(std::vector<ChunkRead>* reads, std::vector<Tier>* tiers) {
  const size_t nb = order_.size();
  std::vector<std::vector<ChunkRead>> batch(nb);
  std::vector<std::vector<size_t>> from(nb);  // batch[b][i] is reads[from[b][i]]
  if (tiers != nullptr) tiers->resize(reads->size());
  for (size_t j = 0; j < reads->size(); ++j) {
    const ChunkRead& r = (*reads)[j];
    size_t b = 0;
    while (b + 1 < nb && !order_[b]->Holds(r.chunk_id, r.layer)) ++b;
    batch[b].push_back(r);
    from[b].push_back(j);
    if (tiers != nullptr) (*tiers)[j] = order_[b]->tier();
  }
  for (size_t b = 0; b < nb; ++b) {
    if (batch[b].empty()) continue;
    RETURN_IF_ERROR(order_[b]->Read(&batch[b]));
    for (size_t i = 0; i < batch[b].size(); ++i) (*reads)[from[b][i]].codec = batch[b][i].codec;
  }
  return Status::OK();
}

void Backends::TellKnown(RadixTree& tree) const {
  for (const auto& b : below_) {
    for (RadixTree::Node* n : tree.Nodes()) {
      PrefixPut known;
      known.tokens = tree.PathTo(n);
      known.ids = tree.MatchPrefix(known.tokens).chunks;
      b->Known(known);
      if (!n->reordered) continue;
      bool on_disk = false;  // a copy this machine keeps below, not on its disk
      for (uint64_t id : n->reordered->chunks) on_disk = on_disk || disk_->Has(id, 0);
      if (on_disk) continue;
      CopyPut copy;
      copy.source = n->chunks, copy.order = &n->reordered->order, copy.copy_first = n->reordered->chunks.front();
      b->KnownCopy(copy);
    }
  }
}

void Backends::PutBelow(const PrefixPut& put) const {
  for (const auto& b : below_) b->Put(put, nullptr);
}

StatusOr<int64_t> Backends::Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                                     const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) const {
  for (const auto& b : below_) {
    ASSIGN_OR_RETURN(const int64_t found, b->Discover(tokens, matched, parent, adopt));
    if (found > 0) return found;
  }
  return int64_t{0};
}

bool Backends::FailedAnywhere(const std::vector<uint64_t>& ids) {
  bool failed = false;
  for (ChunkBackend* b : order_) {
    const std::vector<uint64_t> lost = b->Lost(ids);
    b->ForgetLost(lost);
    failed = failed || !lost.empty();
  }
  return failed;
}

std::set<uint64_t> Backends::ToKeepHome(const std::vector<uint64_t>& ids) const {
  std::set<uint64_t> keep;
  for (ChunkBackend* b : order_)
    for (uint64_t id : b->Lost(ids))
      if (b == &home_ || !disk_->Has(id, 0)) keep.insert(id);
  return keep;
}

void Backends::ForgetLost(const std::vector<uint64_t>& ids) {
  for (ChunkBackend* b : order_) b->ForgetLost(ids);
}

}  // namespace impress
