// PrefixStore's writes: a prefix's new chunks (Insert) and the chunks a
// failed read lost (Heal), each encoded once (EncodeStoredChunks) and committed.
#include "kvstore/prefix_store.h"

#include <ATen/ATen.h>

#include <set>

#include "kvstore/store_log.h"

namespace impress {

StatusOr<HealStats> PrefixStore::Heal(const std::vector<int32_t>& tokens, const DenseKvCache& kv) {
  const int64_t c = geo_.chunk_tokens;
  std::lock_guard<std::mutex> commit(commit_mu_);  // the tree's shape holds still: it changes only under it
  RadixTree::Match match;
  std::vector<std::pair<RadixTree::Node*, std::shared_ptr<const ReorderedChunks>>> copies;
  {
    std::lock_guard<OwnedMutex> lock(index_.mu());
    match = index_.tree().MatchPrefix(tokens);
    for (RadixTree::Node* node : match.path)
      if (node->reordered) copies.push_back({node, node->reordered});
  }
  // A reordered copy that failed a read anywhere is dropped: requests read
  // the node's own chunks, healed below when they failed too. The backends
  // are asked without the index's mutex.
  std::vector<RadixTree::Node*> drop;
  for (const auto& [node, copy] : copies)
    if (backends_->FailedAnywhere(copy->chunks)) drop.push_back(node);
  HealStats stats;
  stats.copies_dropped = static_cast<int64_t>(drop.size());
  if (!drop.empty()) {
    std::lock_guard<OwnedMutex> lock(index_.mu());
    for (RadixTree::Node* node : drop) index_.tree().SetReordered(node, nullptr);
    ForgetRetiredLocked();
  }
  // The matched chunks `kv` holds that failed a read: rewritten on the home
  // backend (a damaged local copy is replaced, a chunk lost below is kept here).
  std::vector<uint64_t> held;
  for (size_t i = 0; i < match.chunks.size() && static_cast<int64_t>(i + 1) * c <= kv.size(); ++i)
    held.push_back(match.chunks[i]);
  const std::set<uint64_t> lost = backends_->ToKeepHome(held);
  if (lost.empty()) return stats;
  std::vector<EncodedChunk> w;
  for (int l = 0; l < geo_.layers; ++l)
    for (size_t i = 0; i < held.size(); ++i) {
      if (!lost.count(held[i])) continue;
      EncodeStoredChunks(geo_, kv_type_, kv, l, static_cast<int64_t>(i), 1, 0, held[i], &w);
    }
  RETURN_IF_ERROR(disk_->Replace(w, FillRecord(), nullptr));
  const std::vector<uint64_t> ids(lost.begin(), lost.end());
  backends_->ForgetLost(ids);
  stats.chunks_written = static_cast<int64_t>(ids.size());
  return stats;
}

StatusOr<int64_t> PrefixStore::Insert(const std::vector<int32_t>& tokens, const DenseKvCache& kv, int64_t kv_offset) {
  const int64_t c = opt_.chunk_tokens;
  const int64_t total = static_cast<int64_t>(tokens.size()) / c;
  auto matched_now = [&] {
    std::lock_guard<OwnedMutex> lock(index_.mu());
    return static_cast<int64_t>(index_.tree().MatchPrefix(tokens).chunks.size());
  };
  // The copies to the host and the encoding run before the commit lock is
  // taken, so that no other commit (nor an adoption) waits on them; a commit
  // that lands meanwhile and changes what is stored makes them again.
  for (;;) {
    const int64_t matched = matched_now();
    if (total <= matched) return int64_t{0};
    IMPRESS_CHECK(kv_offset <= matched * c && kv_offset + kv.size() >= total * c);
    const int64_t n = total - matched;
    std::vector<EncodedChunk> w;  // (layer, chunk); ids 0.. until the commit lock reserves them
    for (int l = 0; l < geo_.layers; ++l) EncodeStoredChunks(geo_, kv_type_, kv, l, matched, n, kv_offset, 0, &w);
    std::vector<int32_t> whole(tokens.begin(), tokens.begin() + total * c);
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> commit(commit_mu_);
      if (matched_now() != matched) continue;
      uint64_t first_id;
      {
        std::lock_guard<OwnedMutex> lock(index_.mu());
        first_id = index_.tree().ReserveChunkIds(static_cast<size_t>(n));
      }
      for (EncodedChunk& x : w) x.chunk_id += first_id;
      RETURN_IF_ERROR(disk_->Commit(w, InsertRecord(whole, first_id)));
      std::lock_guard<OwnedMutex> lock(index_.mu());
      ids = index_.tree().Insert(whole, first_id);
      IMPRESS_CHECK(ids.size() == static_cast<size_t>(total) && ids[matched] == first_id);
    }
    auto chunks = std::make_shared<const std::vector<EncodedChunk>>(std::move(w));
    CacheInserted(*chunks, std::vector<uint64_t>(ids.begin() + matched, ids.end()));
    if (backends_->has_below()) {
      PrefixPut put;
      put.tokens = std::move(whole), put.ids = ids, put.first = static_cast<size_t>(matched), put.chunks = chunks;
      backends_->PutBelow(put);
    }
    return n;
  }
}

void PrefixStore::CacheInserted(const std::vector<EncodedChunk>& chunks, const std::vector<uint64_t>& added) {
  for (const EncodedChunk& e : chunks) cache_->Put(ChunkKey{e.chunk_id, e.layer}.packed(), CacheEntry(e));
  // The score policy places what Put holds once it is observed: computed,
  // never accessed (score 0), these land only where there is room.
  for (int l = 0; l < geo_.layers; ++l) reader_->ObserveWhole(added, l);
}

}  // namespace impress
