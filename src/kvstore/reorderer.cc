#include "kvstore/reorderer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "codec/kv_codec_tensor.h"
#include "kvstore/chunk_codec.h"
#include "kvstore/store_log.h"

namespace impress {

ReorderPlan PlanReorder(const std::vector<std::vector<float>>& history, int64_t n, int chunk_tokens,
                        const ReorderedChunks* current) {
  const int64_t c = chunk_tokens;
  ReorderPlan plan;
  plan.order.resize(history.size());
  for (size_t l = 0; l < history.size(); ++l) {
    const std::vector<float>& h = history[l];
    std::vector<int32_t>& o = plan.order[l];
    o.resize(n * c);
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](int32_t a, int32_t b) { return h[a] > h[b]; });
    for (int64_t i = 0; i < n; ++i) std::sort(o.begin() + i * c, o.begin() + (i + 1) * c);
    // Chunk each token is in now (token order when there is no copy) vs in the new order.
    std::vector<int64_t> was(n * c);
    for (int64_t s = 0; s < n * c; ++s) was[current ? current->order[l][s] : s] = s / c;
    for (int64_t s = 0; s < n * c; ++s) plan.moved += was[o[s]] != s / c;
  }
  return plan;
}

Status Reorderer::Pass(const ReorderOptions& opt, ReorderStats* stats) {
  std::vector<Candidate> todo;
  {
    std::lock_guard<OwnedMutex> lock(ctx_.index->mu());
    for (RadixTree::Node* n : ctx_.index->tree().Nodes()) {
      stats->nodes_examined++;
      if (n->history_n < opt.min_history || n->history.empty()) continue;
      todo.push_back({ctx_.index->tree().PathTo(n), n->chunks, n->history, n->reordered});
    }
  }
  const ChunkGeometry& g = ctx_.geometry;
  for (Candidate& cand : todo) {
    const int64_t n = static_cast<int64_t>(cand.source.size());
    ReorderPlan plan = PlanReorder(cand.history, n, g.chunk_tokens, cand.current.get());
    if (plan.moved < opt.min_moved * static_cast<double>(n * g.chunk_tokens * g.layers)) continue;
    uint64_t first;
    {
      std::lock_guard<OwnedMutex> lock(ctx_.index->mu());
      first = ctx_.index->tree().ReserveChunkIds(static_cast<size_t>(n));
    }
    std::vector<EncodedChunk> chunks;
    ASSIGN_OR_RETURN(const bool packed, Repack(cand, plan.order, first, &chunks, stats));
    if (!packed) continue;
    auto shared = std::make_shared<const std::vector<EncodedChunk>>(std::move(chunks));
    ASSIGN_OR_RETURN(const bool installed, CommitAndInstall(cand, plan, first, shared, stats));
    if (installed) stats->nodes_reordered++;
  }
  return Status::OK();
}

StatusOr<bool> Reorderer::Repack(const Candidate& cand, const std::vector<std::vector<int32_t>>& order, uint64_t first,
                                 std::vector<EncodedChunk>* chunks, ReorderStats* stats) {
  const ChunkGeometry& g = ctx_.geometry;
  const int64_t n = static_cast<int64_t>(cand.source.size()), c = g.chunk_tokens;
  const size_t kb = g.KvBytes(), row = kb / c, probe_row = row / g.kv_heads * g.probe_kv_heads;
  const auto opts = at::TensorOptions().dtype(ctx_.kv_type);
  const bool encoded = g.codec != KvCodec::kNone;
  const int64_t node_start = static_cast<int64_t>(cand.path.size()) / c - n;  // the node's first chunk in its prefix
  for (int l = 0; l < g.layers; ++l) {
    // The node's original chunks, read from the backends (not through the
    // caches, whose counters belong to the requests), decoded.
    at::Tensor k = at::empty({n * c, g.kv_heads, g.head_dim}, opts);
    at::Tensor v = at::empty_like(k);
    at::Tensor raw = encoded ? at::empty({n, 2, static_cast<int64_t>(g.MaxPartBytes(0) + g.MaxPartBytes(1))}, at::kByte)
                             : at::Tensor();
    std::vector<ChunkRead> reads;
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* kd = encoded ? raw[i][0].data_ptr<uint8_t>() : static_cast<uint8_t*>(k.data_ptr()) + i * kb;
      uint8_t* vd = encoded ? raw[i][1].data_ptr<uint8_t>() : static_cast<uint8_t*>(v.data_ptr()) + i * kb;
      reads.push_back({cand.source[i], l, kKeys | kValues, kd, vd, nullptr});
    }
    const Status read = ctx_.backends->Read(&reads, nullptr);
    if (read.IsNotFound()) {  // a chunk gone from a backend below: the node stays as it is
      stats->housekeeping_failures++;
      return false;
    }
    RETURN_IF_ERROR(read);
    for (int64_t i = 0; i < n; ++i) {
      if (encoded) {
        at::Tensor ks = k.narrow(0, i * c, c), vs = v.narrow(0, i * c, c);
        DecodeChunkPart(g, 0, reads[i].codec, raw[i][0].data_ptr<uint8_t>(), &ks);
        DecodeChunkPart(g, 1, reads[i].codec, raw[i][1].data_ptr<uint8_t>(), &vs);
      }
      stats->bytes_read += static_cast<int64_t>(g.PartBytes(0, reads[i].codec) + g.PartBytes(1, reads[i].codec));
    }
    // Token-major rows: slot s of the copy is token order[l][s] of the node.
    at::Tensor k2 = at::empty_like(k), v2 = at::empty_like(v);
    at::Tensor p2 = at::empty({n * c, g.probe_kv_heads, g.head_dim}, opts);
    auto* ks = static_cast<uint8_t*>(k.data_ptr());
    auto* vs = static_cast<uint8_t*>(v.data_ptr());
    for (int64_t s2 = 0; s2 < n * c; ++s2) {
      const int64_t t = order[l][s2];
      std::memcpy(static_cast<uint8_t*>(k2.data_ptr()) + s2 * row, ks + t * row, row);
      std::memcpy(static_cast<uint8_t*>(v2.data_ptr()) + s2 * row, vs + t * row, row);
      std::memcpy(static_cast<uint8_t*>(p2.data_ptr()) + s2 * probe_row, ks + t * row, probe_row);  // the first heads' keys
    }
    EncodeForStore(g.codec, c, l, first, node_start, k2, v2, p2, g.digests, chunks);
  }
  return true;
}

StatusOr<bool> Reorderer::CommitAndInstall(const Candidate& cand, ReorderPlan& plan, uint64_t first,
                                           const std::shared_ptr<const std::vector<EncodedChunk>>& chunks,
                                           ReorderStats* stats) {
  const ChunkGeometry& g = ctx_.geometry;
  const int64_t n = static_cast<int64_t>(cand.source.size());
  ChunkBackend* below = ctx_.backends->first_below();
  bool on_disk = below == nullptr;
  for (uint64_t id : cand.source) on_disk = on_disk || ctx_.disk->Has(id, 0);
  if (!on_disk) {
    // A node this machine reads from below keeps its copy there too: the
    // local disk holds only what this machine computed.
    CopyPut put;
    put.source = cand.source, put.order = &plan.order, put.copy_first = first, put.chunks = chunks;
    Status written;
    below->PutCopy(std::move(put), [&](const Status& s) { written = s; });
    if (!written.ok()) {
      stats->housekeeping_failures++;
      return false;
    }
  }
  auto copy = std::make_shared<ReorderedChunks>();
  for (int64_t i = 0; i < n; ++i) copy->chunks.push_back(first + static_cast<uint64_t>(i));
  std::lock_guard<std::mutex> commit(*ctx_.commit_mu);
  const std::string record = ReorderRecord(cand.path, cand.source, first, plan.order);
  RETURN_IF_ERROR(ctx_.disk->Commit(on_disk ? *chunks : std::vector<EncodedChunk>{}, record));
  stats->chunks_written += static_cast<int64_t>(chunks->size());
  for (const EncodedChunk& w : *chunks)
    for (int part = 0; part < 3; ++part) stats->bytes_written += static_cast<int64_t>(g.PartBytes(part, w.codec));
  copy->order = std::move(plan.order);
  std::lock_guard<OwnedMutex> lock(ctx_.index->mu());
  if (!InstallCopy(cand.path, cand.source, copy, g.layers, &ctx_.index->tree())) {
    ctx_.index->AddUnfreedLocked(copy->chunks);  // a split since made it stale: nothing reads it
    return false;
  }
  RecacheLocked(cand, *copy, *chunks, stats);
  return true;
}

void Reorderer::RecacheLocked(const Candidate& cand, const ReorderedChunks& copy,
                              const std::vector<EncodedChunk>& chunks, ReorderStats* stats) {
  const ChunkGeometry& g = ctx_.geometry;
  const int64_t n = static_cast<int64_t>(cand.source.size());
  std::vector<uint64_t> old = cand.source;
  if (cand.current) old.insert(old.end(), cand.current->chunks.begin(), cand.current->chunks.end());
  // Per layer, how many of the old chunks each cache tier held; drops them.
  std::vector<TierCounts> cached(g.layers);
  for (int l = 0; l < g.layers; ++l) {
    for (uint64_t id : old) {
      const std::optional<Tier> t = ctx_.cache->Where(ChunkKey{id, l}.packed());
      if (!t) continue;
      cached[l][*t]++;
      ctx_.cache->Erase(ChunkKey{id, l}.packed());
    }
  }
  // The node's share of each tier goes to the copy's most important chunks,
  // and so do its best scores.
  for (int l = 0; l < g.layers; ++l) {
    std::vector<uint64_t> from, to;
    for (uint64_t id : cand.current ? cand.current->chunks : cand.source) from.push_back(ChunkKey{id, l}.packed());
    for (uint64_t id : copy.chunks) to.push_back(ChunkKey{id, l}.packed());
    ctx_.cache->TransferScores(from, to);
    int64_t i = 0;  // the copy's chunks, most important first, into the tiers fastest first
    for (int t = 0; t < kMaxTiers; ++t)
      for (int64_t k = 0; k < cached[l][t] && i < n; ++k, ++i) {
        const EncodedChunk& e = chunks[static_cast<size_t>(l * n + i)];  // Repack's order: by layer, then chunk
        ctx_.cache->PutIn(ChunkKey{copy.chunks[i], l}.packed(), CacheEntry(e), static_cast<Tier>(t));
      }
    stats->chunks_recached += i;
  }
}

}  // namespace impress
