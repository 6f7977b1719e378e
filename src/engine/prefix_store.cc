#include "engine/prefix_store.h"

#include <ATen/ATen.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "engine/compaction.h"
#include "engine/store_log.h"
#include "model/model.h"
#include "remote/remote_store.h"
#include "store/crc32c.h"

namespace impress {
namespace {

StatusOr<at::ScalarType> KvType(const std::string& s) {
  if (s == "float16") return at::kHalf;
  if (s == "bfloat16") return at::kBFloat16;
  if (s == "float32") return at::kFloat;
  return Status::InvalidArgument("--kv-dtype: unknown '" + s + "' (float16, bfloat16, float32)");
}

uint32_t WeightsChecksum(const std::string& dir) {
  std::string path = dir + "/model.safetensors";
  if (!std::filesystem::exists(path)) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") path = std::min(path, e.path().string());
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::vector<char> buf(1 << 20);
  ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
  ::close(fd);
  return n > 0 ? Crc32c(buf.data(), static_cast<size_t>(n)) : 0;
}

}  // namespace

std::string StoreFingerprint(const Model& model, const std::string& kv_dtype, int chunk_tokens) {
  const ModelConfig& c = model.config();
  char crc[16];
  std::snprintf(crc, sizeof(crc), "%08x", WeightsChecksum(model.dir()));
  return c.model_type + "-L" + std::to_string(c.num_layers) + "-D" + std::to_string(c.hidden_size) + "-KV" +
         std::to_string(c.num_kv_heads) + "x" + std::to_string(c.head_dim) + "-V" + std::to_string(c.vocab_size) +
         "-w" + crc + "/" + kv_dtype + "/c" + std::to_string(chunk_tokens);
}

PrefixStore::PrefixStore(const Model& model, const PrefixStoreOptions& opt)
    : model_(model), opt_(opt), tree_(opt.chunk_tokens), load_stream_(model.device()) {}

StatusOr<std::unique_ptr<PrefixStore>> PrefixStore::Open(const Model& model, const PrefixStoreOptions& opt) {
  if (opt.chunk_tokens <= 0) return Status::InvalidArgument("--chunk must be positive");
  std::unique_ptr<PrefixStore> s(new PrefixStore(model, opt));
  ASSIGN_OR_RETURN(s->kv_type_, KvType(opt.kv_dtype));
  const ModelConfig& c = model.config();
  s->geo_ = ChunkGeometry{opt.chunk_tokens, c.num_layers, c.num_kv_heads, c.head_dim,
                          static_cast<int>(ProbeKvHeads(opt.probe_heads, c.num_heads, c.num_kv_heads, opt.probe_layout)),
                          static_cast<int>(c10::elementSize(s->kv_type_))};
  StoreOptions so;
  so.geometry = s->geo_;
  so.fingerprint = StoreFingerprint(model, opt.kv_dtype, opt.chunk_tokens);
  so.io_threads = opt.io_threads;
  so.env = opt.env != nullptr ? opt.env : Env::Default();
  if (opt.disk_bytes_per_second > 0) {  // the cap wraps the file operations; the chunk store does not know it
    s->paced_env_ = NewThrottledEnv(so.env, opt.disk_bytes_per_second);
    so.env = s->paced_env_.get();
  }
  std::vector<std::string> committed;
  ASSIGN_OR_RETURN(s->disk_, ChunkStore::Open(opt.dir, so, &committed));
  for (const auto& meta : committed)  // rebuild the tree: same inserts and reorders, same chunk ids
    RETURN_IF_ERROR(ReplayRecord(meta, c.num_layers, &s->tree_).WithContext(opt.dir + "/log"));
  // What the tree does not reach is garbage an earlier session left: copies
  // replaced while still leased, dropped by a split after its last pass, or
  // superseded by a session that started in token order. Freeing it is
  // housekeeping: a failure (a full disk, no holes) leaves it allocated.
  s->tree_.TakeRetired();
  CompactStats freed;
  if (FreeUnreachable(s->tree_, s->disk_.get(), &freed).ok() && freed.chunks_freed > 0)
    (void)s->disk_->RewriteLog(nullptr, nullptr);  // their records too; on failure the old log stands
  s->log_rewritten_at_ = s->disk_->LogBytes();
  if (opt.remote != nullptr) {  // every original chunk's content key, for reads and publishing
    s->root_key_ = RootKey(so.fingerprint);
    for (RadixTree::Node* n : s->tree_.Nodes()) {
      const std::vector<int32_t> path = s->tree_.PathTo(n);
      s->AddContentKeys(path, s->tree_.MatchPrefix(path).chunks);
      ContentKey last;
      if (n->reordered && s->ContentKeyOf(n->chunks.back(), &last) && s->RemoteOnly(n->reordered->chunks))
        s->RecordKeys(n->reordered->chunks, CopyKeys(last, n->reordered->order, n->reordered->chunks.size()));
    }
  }
  if (!opt.stored_copies) {  // start in token order; the copies stay on disk for later sessions
    for (RadixTree::Node* n : s->tree_.Nodes()) s->tree_.SetReordered(n, nullptr);
    s->tree_.TakeRetired();
  }
  TierOptions tiers = opt.tiers;
  tiers.gpu_device = model.device();
  ASSIGN_OR_RETURN(s->cache_, TieredCache::Create(tiers));
  PrefixStore* self = s.get();
  s->cache_->SetPinned([self](uint64_t key) { return self->IsPinned(key >> 12); });
  return s;
}

bool PrefixStore::InstallLocked(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                                std::shared_ptr<const ReorderedChunks> copy) {
  return InstallCopy(path, source, std::move(copy), geo_.layers, &tree_);
}

void PrefixStore::ForgetRetiredLocked() {
  for (uint64_t c : tree_.TakeRetired()) {
    for (int l = 0; l < geo_.layers; ++l) cache_->Erase(CacheKey(c, l));
    unfreed_.push_back(c);
  }
}

Status PrefixStore::FreeRetired(FreeStats* stats) {
  std::vector<uint64_t> now;
  {
    // Retired chunks are out of the tree, so no later Acquire can pin them.
    std::lock_guard<std::mutex> lock(mu_);
    ForgetRetiredLocked();
    std::vector<uint64_t> later;
    for (uint64_t c : unfreed_) (IsPinned(c) ? later : now).push_back(c);
    unfreed_ = std::move(later);
  }
  Status s = disk_->Free(now, stats);
  if (!s.ok()) {
    // Nothing was logged, so the chunks are still stored: the next call tries
    // again. (Free having logged but failed to punch, the ids are no longer
    // stored and the retry skips them; `store compact` reclaims the space.)
    std::lock_guard<std::mutex> lock(mu_);
    unfreed_.insert(unfreed_.end(), now.begin(), now.end());
  }
  return s;
}

PrefixLease PrefixStore::Acquire(const std::vector<int32_t>& prefix, int64_t max_tokens) {
  if (opt_.remote != nullptr) {
    // A failure to log the adoption leaves the tree as it was: the request
    // computes what the cluster had.
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(prefix.size()), max_tokens));
    (void)Discover(std::vector<int32_t>(prefix.begin(), prefix.begin() + n));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ForgetRetiredLocked();
  PrefixLease lease;
  lease.match = tree_.MatchPrefix(prefix);
  RadixTree::Match& m = lease.match;
  while (!m.chunks.empty() && m.tokens() > max_tokens) m.chunks.pop_back();
  // Walk the path: each node contributes its matched chunks (all of them, or a leading part).
  const int64_t c = geo_.chunk_tokens;
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
  if (any_reordered) {
    const int64_t p = m.tokens();
    for (int l = 0; l < geo_.layers; ++l) {
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
  }
  return lease;
}

void PrefixStore::Release(const PrefixLease& lease) {
  std::lock_guard<std::mutex> pins(pin_mu_);
  for (uint64_t id : lease.chunks)
    if (--pinned_[id] == 0) pinned_.erase(id);
}

bool PrefixStore::IsPinned(uint64_t chunk) const {
  std::lock_guard<std::mutex> pins(pin_mu_);
  return pinned_.count(chunk) > 0;
}

at::Tensor PrefixStore::ToTokenOrder(const PrefixLease& lease, int layer, const at::Tensor& stored) const {
  if (!lease.reordered()) return stored;
  return stored.index_select(1, lease.slot_of[layer].to(stored.device()));
}

at::Tensor PrefixStore::SlotsOf(const PrefixLease& lease, int layer, const at::Tensor& positions) const {
  if (!lease.reordered()) return positions;
  return lease.slot_of[layer].index_select(0, positions.cpu());
}

void PrefixStore::RecordImportance(const PrefixLease& lease, int layer, const at::Tensor& importance) {
  at::Tensor imp = importance.to(at::kCPU, at::kFloat).contiguous();
  const float* x = imp.data_ptr<float>();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& sp : lease.spans) {
    RadixTree::Node* node = sp.node;
    // A partial match sees only part of the node (its ranks would be biased);
    // a node split since the lease was taken no longer has this span's shape.
    if (!sp.whole || sp.length != static_cast<int64_t>(node->tokens.size())) continue;
    if (node->history.empty()) node->history.assign(geo_.layers, std::vector<float>(node->tokens.size(), 0.f));
    auto& h = node->history[layer];
    for (int64_t t = 0; t < sp.length; ++t) h[t] += x[sp.start + t];
    if (layer == 0) node->history_n++;
  }
}

Status PrefixStore::Reorder(const ReorderOptions& opt, ReorderStats* stats) {
  struct Candidate {
    std::vector<int32_t> path;
    std::vector<uint64_t> source;
    std::vector<std::vector<float>> history;
    std::shared_ptr<const ReorderedChunks> current;
  };
  std::vector<Candidate> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (RadixTree::Node* n : tree_.Nodes()) {
      stats->nodes_examined++;
      if (n->history_n < opt.min_history || n->history.empty()) continue;
      todo.push_back({tree_.PathTo(n), n->chunks, n->history, n->reordered});
    }
  }
  const int64_t c = geo_.chunk_tokens;
  const size_t kb = geo_.KeyBytes();
  const auto opts = at::TensorOptions().dtype(kv_type_);
  for (Candidate& cand : todo) {
    const int64_t n = static_cast<int64_t>(cand.source.size());
    // Most important first (ties keep token order); inside a chunk, token
    // order: only which chunk a token lands in matters. This thread runs
    // beside requests, so it uses no LibTorch kernels that would start an
    // intra-op thread team of its own (that team slowed the request thread).
    std::vector<std::vector<int32_t>> order(geo_.layers);
    int64_t moved = 0;
    for (int l = 0; l < geo_.layers; ++l) {
      const std::vector<float>& h = cand.history[l];
      std::vector<int32_t>& o = order[l];
      o.resize(n * c);
      std::iota(o.begin(), o.end(), 0);
      std::stable_sort(o.begin(), o.end(), [&](int32_t a, int32_t b) { return h[a] > h[b]; });
      for (int64_t i = 0; i < n; ++i) std::sort(o.begin() + i * c, o.begin() + (i + 1) * c);
      // Chunk each token is in now (token order when there is no copy) vs in the new order.
      std::vector<int64_t> was(n * c);
      for (int64_t s = 0; s < n * c; ++s) was[cand.current ? cand.current->order[l][s] : s] = s / c;
      for (int64_t s = 0; s < n * c; ++s) moved += was[o[s]] != s / c;
    }
    if (moved < opt.min_moved * static_cast<double>(n * c * geo_.layers)) continue;
    // Read the node's original chunks from disk (not through the caches,
    // whose counters belong to the requests) and re-pack them.
    std::vector<ChunkWrite> writes;
    std::vector<at::Tensor> keep;
    uint64_t first;
    {
      std::lock_guard<std::mutex> lock(mu_);
      first = tree_.ReserveChunkIds(static_cast<size_t>(n));
    }
    for (int l = 0; l < geo_.layers; ++l) {
      at::Tensor k = at::empty({n * c, geo_.kv_heads, geo_.head_dim}, opts);
      at::Tensor v = at::empty_like(k);
      std::vector<ChunkRead> reads;
      for (int64_t i = 0; i < n; ++i)
        reads.push_back({cand.source[i], l, kKeys | kValues, static_cast<uint8_t*>(k.data_ptr()) + i * kb,
                         static_cast<uint8_t*>(v.data_ptr()) + i * kb, nullptr});
      std::vector<bool> from_remote;
      const Status read = ReadTiered(reads, &from_remote);
      if (read.IsNotFound()) {  // a remote chunk that is gone: the node stays as it is
        stats->housekeeping_failures++;
        writes.clear();
        break;
      }
      RETURN_IF_ERROR(read);
      stats->bytes_read += 2 * n * static_cast<int64_t>(kb);
      // Token-major rows: slot s of the copy is token order[l][s] of the node.
      at::Tensor k2 = at::empty_like(k), v2 = at::empty_like(v);
      at::Tensor p2 = at::empty({n * c, geo_.probe_kv_heads, geo_.head_dim}, opts);
      const size_t row = kb / c, probe_row = geo_.ProbeBytes() / c;
      for (int64_t s2 = 0; s2 < n * c; ++s2) {
        const int64_t t = order[l][s2];
        std::memcpy(static_cast<uint8_t*>(k2.data_ptr()) + s2 * row, static_cast<uint8_t*>(k.data_ptr()) + t * row, row);
        std::memcpy(static_cast<uint8_t*>(v2.data_ptr()) + s2 * row, static_cast<uint8_t*>(v.data_ptr()) + t * row, row);
        std::memcpy(static_cast<uint8_t*>(p2.data_ptr()) + s2 * probe_row,
                    static_cast<uint8_t*>(k.data_ptr()) + t * row, probe_row);  // the first heads' keys
      }
      keep.insert(keep.end(), {k2, v2, p2});
      for (int64_t i = 0; i < n; ++i)
        writes.push_back({first + static_cast<uint64_t>(i), l, k2[i * c].data_ptr(), v2[i * c].data_ptr(),
                          p2[i * c].data_ptr()});
    }
    if (writes.size() != static_cast<size_t>(n * geo_.layers)) continue;
    if (RemoteOnly(cand.source)) {
      // A node this machine reads from the cluster keeps its copy there too:
      // the local disk holds only what this machine computed.
      if (!PublishCopy(cand.source, order, first, keep).ok()) {
        stats->housekeeping_failures++;
        continue;
      }
      RETURN_IF_ERROR(disk_->Commit({}, ReorderRecord(cand.path, cand.source, first, order)));
    } else {
      RETURN_IF_ERROR(disk_->Commit(writes, ReorderRecord(cand.path, cand.source, first, order)));
    }
    stats->chunks_written += static_cast<int64_t>(writes.size());
    stats->bytes_written += static_cast<int64_t>(writes.size() * (2 * kb + geo_.ProbeBytes()));
    auto copy = std::make_shared<ReorderedChunks>();
    for (int64_t i = 0; i < n; ++i) copy->chunks.push_back(first + static_cast<uint64_t>(i));
    copy->order = std::move(order);
    std::vector<uint64_t> old = cand.source;
    if (cand.current) old.insert(old.end(), cand.current->chunks.begin(), cand.current->chunks.end());
    std::lock_guard<std::mutex> lock(mu_);
    if (!InstallLocked(cand.path, cand.source, copy)) {  // a split since made it stale: nothing reads it
      unfreed_.insert(unfreed_.end(), copy->chunks.begin(), copy->chunks.end());
      continue;
    }
    stats->nodes_reordered++;
    // The node's share of each tier goes to the copy's most important chunks,
    // and so do its best scores.
    auto cached = UncacheLocked(old);
    for (int l = 0; l < geo_.layers; ++l) {
      std::vector<uint64_t> from, to;
      for (uint64_t id : cand.current ? cand.current->chunks : cand.source) from.push_back(CacheKey(id, l));
      for (uint64_t id : copy->chunks) to.push_back(CacheKey(id, l));
      cache_->TransferScores(from, to);
      const int64_t gpu = std::min(cached[l][0], n), cpu = std::min(cached[l][1], n - gpu);
      for (int64_t i = 0; i < gpu + cpu; ++i) {
        ChunkKv kv{at::empty({c, geo_.kv_heads, geo_.head_dim}, opts), at::empty({c, geo_.kv_heads, geo_.head_dim}, opts)};
        std::memcpy(kv.k.data_ptr(), static_cast<uint8_t*>(keep[3 * l].data_ptr()) + i * kb, kb);
        std::memcpy(kv.v.data_ptr(), static_cast<uint8_t*>(keep[3 * l + 1].data_ptr()) + i * kb, kb);
        cache_->PutIn(CacheKey(copy->chunks[i], l), kv, i < gpu ? Tier::kGpu : Tier::kCpu);
      }
      stats->chunks_recached += gpu + cpu;
    }
  }
  // Freeing and the log rewrite are housekeeping: the copies are installed
  // and durable, so a failure (a full disk) leaves the space and the log as
  // they were for the next pass, and the pass still succeeds.
  FreeStats freed;
  if (FreeRetired(&freed).ok())
    stats->bytes_freed += static_cast<int64_t>(freed.bytes);
  else
    stats->housekeeping_failures++;
  const uint64_t log = disk_->LogBytes();
  if (opt.log_growth > 0 && log >= static_cast<uint64_t>(opt.log_min_bytes) &&
      log >= opt.log_growth * log_rewritten_at_) {
    uint64_t before = 0, after = 0;
    if (disk_->RewriteLog(&before, &after).ok()) {
      log_rewritten_at_ = after;
      stats->log_bytes_dropped += static_cast<int64_t>(before - after);
    } else {
      stats->housekeeping_failures++;
    }
  }
  return Status::OK();
}

std::vector<std::array<int64_t, 2>> PrefixStore::UncacheLocked(const std::vector<uint64_t>& ids) {
  std::vector<std::array<int64_t, 2>> out(geo_.layers, {0, 0});
  for (int l = 0; l < geo_.layers; ++l) {
    for (uint64_t id : ids) {
      const Tier t = cache_->Where(CacheKey(id, l));
      if (t == Tier::kDisk) continue;
      out[l][static_cast<int>(t)]++;
      cache_->Erase(CacheKey(id, l));
    }
  }
  return out;
}

ReorderFootprint PrefixStore::Footprint() const {
  std::lock_guard<std::mutex> lock(mu_);
  ReorderFootprint f;
  for (RadixTree::Node* n : tree_.Nodes()) {
    if (n->reordered)
      for (const auto& o : n->reordered->order) f.mapping_bytes += static_cast<int64_t>(o.size() * sizeof(int32_t));
    for (const auto& h : n->history) f.history_bytes += static_cast<int64_t>(h.size() * sizeof(float));
    f.chunk_bytes += static_cast<int64_t>(n->chunks.size()) * geo_.layers * chunk_kv_bytes();
  }
  f.score_bytes = cache_->score_bytes();
  return f;
}

int64_t PrefixStore::chunk_kv_bytes() const { return 2 * static_cast<int64_t>(geo_.KeyBytes()); }

Status PrefixStore::LoadLayer(const std::vector<uint64_t>& chunks, int layer, at::Tensor* k, at::Tensor* v,
                              LoadStats* stats) {
  std::vector<Parts> parts;
  RETURN_IF_ERROR(Fetch(chunks, layer, kKeys | kValues, &parts, stats));
  ObserveWhole(chunks, layer);  // every token of every chunk is used
  std::vector<at::Tensor> ks, vs;
  for (auto& p : parts) {
    ks.push_back(p.k);
    vs.push_back(p.v);
  }
  *k = StackChunks(ks);
  *v = StackChunks(vs);
  return Status::OK();
}

void PrefixStore::ObserveWhole(const std::vector<uint64_t>& chunks, int layer) {
  if (!cache_->wants_observations()) return;
  std::vector<std::pair<uint64_t, double>> shares;
  for (uint64_t c : chunks) shares.push_back({CacheKey(c, layer), 1.0});
  cache_->Observe(shares);
}

at::Tensor PrefixStore::StackChunks(const std::vector<at::Tensor>& parts) const {
  std::vector<at::Tensor> on;
  for (const auto& p : parts) {
    load_stream_.HandOver(p);  // a cached chunk may be made and freed on other streams
    on.push_back(p.to(model_.device(), /*non_blocking=*/p.is_pinned()));
  }
  return at::cat(on, 0).transpose(0, 1).to(model_.dtype()).contiguous();
}

Status PrefixStore::Fetch(const std::vector<uint64_t>& chunks, int layer, uint8_t parts, std::vector<Parts>* out,
                          LoadStats* stats) {
  return Fetch(chunks, layer, std::vector<uint8_t>(chunks.size(), parts), out, stats);
}

Status PrefixStore::Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
                          std::vector<Parts>* out, LoadStats* stats) {
  IMPRESS_CHECK(parts.size() == chunks.size());
  out->resize(chunks.size());
  const size_t kb = geo_.KeyBytes(), pb = geo_.ProbeBytes();
  auto opts = at::TensorOptions().dtype(kv_type_);
  std::vector<size_t> todo;
  std::vector<uint8_t> need(chunks.size(), 0);
  std::vector<bool> fresh(chunks.size(), false);  // nothing of it fetched before: counts as one chunk read
  for (size_t i = 0; i < chunks.size(); ++i) {
    Parts& p = (*out)[i];
    uint8_t missing = 0;
    if ((parts[i] & kKeys) && !p.k.defined()) missing |= kKeys;
    if ((parts[i] & kValues) && !p.v.defined()) missing |= kValues;
    if ((parts[i] & kProbeKeys) && !p.probe.defined() && !p.k.defined()) missing |= kProbeKeys;
    if (!missing) continue;
    Tier tier;
    if (!p.k.defined() && !p.v.defined()) {  // untouched: the caches may hold it whole
      auto hit = cache_->Get(CacheKey(chunks[i], layer), &tier);
      if (hit) {
        p.k = hit->k;
        p.v = hit->v;
        p.tier = tier;
        stats->hits[static_cast<int>(tier)]++;
        stats->bytes[static_cast<int>(tier)] += hit->bytes();
        stats->chunks++;
        continue;
      }
    }
    need[i] = missing;
    fresh[i] = !p.k.defined() && !p.v.defined() && !p.probe.defined();
    todo.push_back(i);
  }
  if (todo.empty()) return Status::OK();
  // One batch from the local disk, then one round to the remote tier for
  // the chunks this machine does not store, each part read straight into its
  // tensor: page-locked under CUDA (LibTorch's pool of pinned buffers, taken
  // and given back per read), so that copies to the device are asynchronous.
  const std::vector<int64_t> full = {geo_.chunk_tokens, geo_.kv_heads, geo_.head_dim};
  const std::vector<int64_t> probe = {geo_.chunk_tokens, geo_.probe_kv_heads, geo_.head_dim};
  const auto host = opts.pinned_memory(model_.device().is_cuda());
  std::vector<std::array<at::Tensor, 3>> got(todo.size());
  std::vector<ChunkRead> reads;
  for (size_t j = 0; j < todo.size(); ++j) {
    const uint8_t m = need[todo[j]];
    uint8_t* dst[3] = {nullptr, nullptr, nullptr};
    for (int part = 0; part < 3; ++part) {
      if (!(m & (1 << part))) continue;  // ChunkPart: keys, values, probe keys
      got[j][part] = at::empty(part == 2 ? probe : full, host);
      dst[part] = static_cast<uint8_t*>(got[j][part].data_ptr());
    }
    reads.push_back({chunks[todo[j]], layer, m, dst[0], dst[1], dst[2]});
  }
  std::vector<bool> from_remote;
  RETURN_IF_ERROR(ReadTiered(reads, &from_remote));
  TierCounts bytes;
  for (size_t j = 0; j < todo.size(); ++j) {
    Parts& p = (*out)[todo[j]];
    const uint8_t m = need[todo[j]];
    const Tier tier = !from_remote.empty() && from_remote[j] ? Tier::kRemote : Tier::kDisk;
    if (m & kKeys) p.k = got[j][0], bytes[tier] += kb;
    if (m & kValues) p.v = got[j][1], bytes[tier] += kb;
    if (m & kProbeKeys) p.probe = got[j][2], bytes[tier] += pb;
    p.tier = tier;
    if (fresh[todo[j]]) {
      (tier == Tier::kRemote ? stats->remote_chunks : stats->disk_chunks)++;
      stats->chunks++;
    }
    if (p.k.defined() && p.v.defined()) cache_->Put(CacheKey(chunks[todo[j]], layer), ChunkKv{p.k, p.v});
  }
  stats->bytes += bytes;
  for (Tier t : {Tier::kDisk, Tier::kRemote})
    if (bytes[t] > 0) cache_->RecordRead(t, bytes[t]);
  return Status::OK();
}

bool PrefixStore::ContentKeyOf(uint64_t id, ContentKey* key) const {
  std::lock_guard<std::mutex> lock(keys_mu_);
  auto it = content_.find(id);
  if (it == content_.end()) return false;
  *key = it->second;
  return true;
}

void PrefixStore::RecordKeys(const std::vector<uint64_t>& ids, const std::vector<ContentKey>& keys) {
  std::lock_guard<std::mutex> lock(keys_mu_);
  for (size_t i = 0; i < ids.size(); ++i) content_.emplace(ids[i], keys[i]);
}

std::vector<ContentKey> PrefixStore::AddContentKeys(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& ids) {
  std::vector<ContentKey> keys = ChainKeys(root_key_, tokens, 0, ids.size(), geo_.chunk_tokens);
  RecordKeys(ids, keys);
  return keys;
}

Status PrefixStore::ReadRemote(const std::vector<uint64_t>& ids, std::vector<RemoteStore::Read>* reads) {
  for (size_t j = 0; j < ids.size(); ++j)
    if (!ContentKeyOf(ids[j], &(*reads)[j].key))
      return Status::NotFound("chunk " + std::to_string(ids[j]) + " is neither on the local disk nor in the remote tier");
  opt_.remote->ReadParts(geo_, reads);
  Status first;
  std::lock_guard<std::mutex> lock(keys_mu_);
  for (size_t j = 0; j < ids.size(); ++j) {
    const Status& st = (*reads)[j].status;
    if (st.ok()) continue;
    lost_.insert(ids[j]);
    if (first.ok()) first = st;
  }
  if (!first.ok()) return Status::NotFound("remote tier: " + first.message());
  return Status::OK();
}

Status PrefixStore::ReadTiered(const std::vector<ChunkRead>& reads, std::vector<bool>* from_remote) {
  if (opt_.remote == nullptr) return disk_->Read(reads);
  from_remote->assign(reads.size(), false);
  std::vector<ChunkRead> local;
  std::vector<uint64_t> ids;
  std::vector<RemoteStore::Read> remote;
  for (size_t j = 0; j < reads.size(); ++j) {
    const ChunkRead& r = reads[j];
    if (disk_->Has(r.chunk_id, r.layer)) {
      local.push_back(r);
      continue;
    }
    (*from_remote)[j] = true;
    ids.push_back(r.chunk_id);
    RemoteStore::Read rr;
    rr.layer = r.layer, rr.parts = r.parts, rr.keys = r.keys, rr.values = r.values, rr.probe = r.probe;
    remote.push_back(rr);
  }
  RETURN_IF_ERROR(disk_->Read(local));
  return remote.empty() ? Status::OK() : ReadRemote(ids, &remote);
}

StatusOr<int64_t> PrefixStore::Discover(const std::vector<int32_t>& tokens) {
  if (opt_.remote == nullptr) return int64_t{0};
  const int64_t c = geo_.chunk_tokens, total = static_cast<int64_t>(tokens.size()) / c;
  int64_t matched;
  ContentKey parent = root_key_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const RadixTree::Match m = tree_.MatchPrefix(tokens);
    matched = static_cast<int64_t>(m.chunks.size());
    if (matched >= total) return int64_t{0};
    if (matched > 0 && !ContentKeyOf(m.chunks.back(), &parent)) return int64_t{0};
  }
  // The cluster is asked without the tree's lock: other requests go on.
  std::vector<ContentKey> keys;
  const int64_t found = opt_.remote->FindChain(parent, tokens, matched, total - matched, geo_.chunk_tokens, &keys);
  if (found == 0) return int64_t{0};
  std::lock_guard<std::mutex> lock(mu_);
  // Another thread changed this prefix meanwhile: leave it to the next lookup.
  if (static_cast<int64_t>(tree_.MatchPrefix(tokens).chunks.size()) != matched) return int64_t{0};
  const std::vector<int32_t> whole(tokens.begin(), tokens.begin() + (matched + found) * c);
  const uint64_t first = tree_.next_chunk_id();
  RETURN_IF_ERROR(disk_->Commit({}, InsertRecord(whole, first)));  // the tree's record; the data stays remote
  const std::vector<uint64_t> ids = tree_.Insert(whole, first);
  keys.resize(found);
  RecordKeys(std::vector<uint64_t>(ids.begin() + matched, ids.end()), keys);
  return found;
}

std::array<at::Tensor, 3> PrefixStore::HostChunks(const DenseKvCache& kv, int l, int64_t first, int64_t n,
                                                  int64_t kv_offset) const {
  const int64_t c = geo_.chunk_tokens;
  // [Hkv, T, d] -> token-major [T, Hkv, d] in the stored dtype, on the host.
  at::Tensor k = kv.keys(l).narrow(1, first * c - kv_offset, n * c).transpose(0, 1).to(at::kCPU, kv_type_).contiguous();
  at::Tensor v = kv.values(l).narrow(1, first * c - kv_offset, n * c).transpose(0, 1).to(at::kCPU, kv_type_).contiguous();
  at::Tensor p = k.narrow(1, 0, geo_.probe_kv_heads).contiguous();
  return {k, v, p};
}

bool PrefixStore::RemoteOnly(const std::vector<uint64_t>& ids) const {
  if (opt_.remote == nullptr) return false;
  for (uint64_t id : ids)
    if (disk_->Has(id, 0)) return false;
  return true;
}

Status PrefixStore::PublishCopy(const std::vector<uint64_t>& source, const std::vector<std::vector<int32_t>>& order,
                                uint64_t first, const std::vector<at::Tensor>& keep) {
  ContentKey last;
  if (!ContentKeyOf(source.back(), &last)) return Status::NotFound("the node's chunks have no content key");
  const std::vector<ContentKey> keys = CopyKeys(last, order, source.size());
  auto owner = std::make_shared<const std::vector<at::Tensor>>(keep);
  std::vector<RemoteStore::Chunk> chunks;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < keys.size(); ++i) {
    chunks.push_back(RemoteChunk(owner, static_cast<int64_t>(i), keys[i], last, {static_cast<int32_t>(i)}));
    ids.push_back(first + i);
  }
  // Readers must find the whole copy once it is installed: wait for it.
  const int64_t errors = opt_.remote->counters().write_errors;
  opt_.remote->WriteAsync(std::move(chunks));
  opt_.remote->Flush();
  if (opt_.remote->counters().write_errors != errors) return Status::IOError("publishing a reordered copy failed");
  RecordKeys(ids, keys);
  return Status::OK();
}

RemoteStore::Chunk PrefixStore::RemoteChunk(const std::shared_ptr<const std::vector<at::Tensor>>& owner, int64_t i,
                                            const ContentKey& key, const ContentKey& parent,
                                            std::vector<int32_t> tokens) const {
  RemoteStore::Chunk ch;
  ch.geometry = geo_;
  ch.key = key;
  ch.parent = parent;
  ch.tokens = std::move(tokens);
  const int64_t row = i * geo_.chunk_tokens;
  for (int l = 0; l < geo_.layers; ++l) {
    ch.keys.push_back((*owner)[3 * l][row].data_ptr());
    ch.values.push_back((*owner)[3 * l + 1][row].data_ptr());
    ch.probe.push_back((*owner)[3 * l + 2][row].data_ptr());
  }
  ch.owner = owner;
  return ch;
}

Status PrefixStore::KeepLostLocked(const RadixTree::Match& match, const DenseKvCache& kv, int64_t kv_offset) {
  if (opt_.remote == nullptr) return Status::OK();
  const std::vector<uint64_t>& matched = match.chunks;
  const int64_t c = geo_.chunk_tokens;
  std::vector<int64_t> keep;  // indices into `matched`
  {
    std::lock_guard<std::mutex> lock(keys_mu_);
    // A reordered copy in the cluster that failed a read is dropped: requests
    // read the node's own chunks (kept below when they failed too).
    for (RadixTree::Node* node : match.path) {
      if (!node->reordered) continue;
      bool failed = false;
      for (uint64_t id : node->reordered->chunks) failed = lost_.erase(id) > 0 || failed;
      if (failed) tree_.SetReordered(node, nullptr);
    }
    for (size_t i = 0; i < matched.size(); ++i) {
      const int64_t at = static_cast<int64_t>(i) * c;
      if (lost_.count(matched[i]) && at >= kv_offset && at + c <= kv_offset + kv.size()) keep.push_back(static_cast<int64_t>(i));
    }
  }
  std::vector<at::Tensor> hold;
  std::vector<ChunkWrite> writes;
  for (int64_t i : keep) {
    if (disk_->Has(matched[i], 0)) continue;
    for (int l = 0; l < geo_.layers; ++l) {
      auto kvp = HostChunks(kv, l, i, 1, kv_offset);
      hold.insert(hold.end(), kvp.begin(), kvp.end());
      writes.push_back({matched[i], l, kvp[0].data_ptr(), kvp[1].data_ptr(), kvp[2].data_ptr()});
    }
  }
  if (!writes.empty()) RETURN_IF_ERROR(disk_->Commit(writes, FillRecord()));
  std::lock_guard<std::mutex> lock(keys_mu_);
  for (int64_t i : keep) lost_.erase(matched[i]);
  return Status::OK();
}

void PrefixStore::Publish(const std::vector<int32_t>& whole, const std::vector<uint64_t>& ids, int64_t first,
                          std::vector<at::Tensor> keep) {
  const int64_t c = geo_.chunk_tokens;
  const std::vector<ContentKey> keys = AddContentKeys(whole, ids);
  auto owner = std::make_shared<const std::vector<at::Tensor>>(std::move(keep));
  std::vector<RemoteStore::Chunk> chunks;
  for (size_t i = static_cast<size_t>(first); i < ids.size(); ++i)
    chunks.push_back(RemoteChunk(owner, static_cast<int64_t>(i) - first, keys[i], i == 0 ? root_key_ : keys[i - 1],
                                 std::vector<int32_t>(whole.begin() + i * c, whole.begin() + (i + 1) * c)));
  opt_.remote->WriteAsync(std::move(chunks));
}

StatusOr<int64_t> PrefixStore::Insert(const std::vector<int32_t>& tokens, const DenseKvCache& kv, int64_t kv_offset) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t c = opt_.chunk_tokens;
  const RadixTree::Match match = tree_.MatchPrefix(tokens);
  RETURN_IF_ERROR(KeepLostLocked(match, kv, kv_offset));
  const int64_t matched = static_cast<int64_t>(match.chunks.size());
  const int64_t total = static_cast<int64_t>(tokens.size()) / c;
  if (total <= matched) return int64_t{0};
  IMPRESS_CHECK(kv_offset <= matched * c && kv_offset + kv.size() >= total * c);
  const uint64_t first_id = tree_.next_chunk_id();
  std::vector<at::Tensor> keep;
  std::vector<ChunkWrite> writes;
  std::vector<std::pair<uint64_t, ChunkKv>> to_cache;
  for (int l = 0; l < geo_.layers; ++l) {
    auto [k, v, p] = HostChunks(kv, l, matched, total - matched, kv_offset);
    keep.insert(keep.end(), {k, v, p});
    for (int64_t i = 0; i < total - matched; ++i) {
      const uint64_t id = first_id + static_cast<uint64_t>(i);
      writes.push_back({id, l, k[i * c].data_ptr(), v[i * c].data_ptr(), p[i * c].data_ptr()});
      to_cache.push_back({CacheKey(id, l), ChunkKv{k.narrow(0, i * c, c).clone(), v.narrow(0, i * c, c).clone()}});
    }
  }
  std::vector<int32_t> whole(tokens.begin(), tokens.begin() + total * c);
  RETURN_IF_ERROR(disk_->Commit(writes, InsertRecord(whole, first_id)));
  std::vector<uint64_t> ids = tree_.Insert(whole, first_id);
  IMPRESS_CHECK(ids.size() == static_cast<size_t>(total) && ids[matched] == first_id);
  for (auto& [key, chunk] : to_cache) cache_->Put(key, chunk);
  // The score policy places what Put holds once it is observed: computed,
  // never accessed (score 0), these land only where there is room.
  const std::vector<uint64_t> added(ids.begin() + matched, ids.end());
  for (int l = 0; l < geo_.layers; ++l) ObserveWhole(added, l);
  if (opt_.remote != nullptr) Publish(whole, ids, matched, std::move(keep));
  return total - matched;
}

}  // namespace impress
