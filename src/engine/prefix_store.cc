#include "engine/prefix_store.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_set>

#include "codec/kv_codec_tensor.h"
#include "engine/chunk_codec.h"
#include "engine/compaction.h"
#include "engine/store_log.h"
#include "model/model.h"
#include "store/crc32c.h"
#include "store/env.h"

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
  auto file = Env::Default()->Open(path, OpenMode::kRead);
  if (!file.ok()) return 0;
  auto size = (*file)->Size();
  if (!size.ok() || *size == 0) return 0;
  std::vector<char> buf(std::min<uint64_t>(*size, 1 << 20));  // the first MiB: the header and the first tensors
  if (!(*file)->Read(0, buf.size(), buf.data()).ok()) return 0;
  return Crc32c(buf.data(), buf.size());
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

StatusOr<StoreIdentity> StoreIdentityFor(const Model& model, const PrefixStoreOptions& opt) {
  if (opt.chunk_tokens <= 0) return Status::InvalidArgument("--chunk must be positive");
  ASSIGN_OR_RETURN(const at::ScalarType kv_type, KvType(opt.kv_dtype));
  const ModelConfig& c = model.config();
  StoreIdentity id;
  id.geometry = ChunkGeometry{opt.chunk_tokens, c.num_layers, c.num_kv_heads, c.head_dim,
                              static_cast<int>(ProbeKvHeads(opt.probe_heads, c.num_heads, c.num_kv_heads, opt.probe_layout)),
                              static_cast<int>(c10::elementSize(kv_type))};
  if (opt.kv_codec != KvCodec::kNone && kv_type != at::kHalf)
    return Status::InvalidArgument(std::string("--kv-codec ") + KvCodecName(opt.kv_codec) + " encodes float16 KV, not " +
                                   opt.kv_dtype);
  id.geometry.codec = opt.kv_codec;
  id.fingerprint = StoreFingerprint(model, opt.kv_dtype, opt.chunk_tokens);
  return id;
}

PrefixStore::PrefixStore(const Model& model, const PrefixStoreOptions& opt)
    : model_(model), opt_(opt), index_(opt.chunk_tokens, model.config().num_layers), load_stream_(model.device()) {}

PrefixStore::~PrefixStore() = default;

StatusOr<std::unique_ptr<PrefixStore>> PrefixStore::Open(const Model& model, const PrefixStoreOptions& opt) {
  if (opt.chunk_tokens <= 0) return Status::InvalidArgument("--chunk must be positive");
  std::unique_ptr<PrefixStore> s(new PrefixStore(model, opt));
  ASSIGN_OR_RETURN(s->kv_type_, KvType(opt.kv_dtype));
  ASSIGN_OR_RETURN(const StoreIdentity id, StoreIdentityFor(model, opt));
  s->geo_ = id.geometry;
  StoreOptions so;
  so.geometry = id.geometry;
  so.fingerprint = id.fingerprint;
  so.io_threads = opt.io_threads;
  so.env = opt.env != nullptr ? opt.env : Env::Default();
  if (opt.disk_bytes_per_second > 0) {  // the cap wraps the file operations; the chunk store does not know it
    s->paced_env_ = NewThrottledEnv(so.env, opt.disk_bytes_per_second);
    so.env = s->paced_env_.get();
  }
  std::vector<std::string> committed;
  ASSIGN_OR_RETURN(s->disk_, ChunkStore::Open(opt.dir, so, &committed));
  s->home_ = std::make_unique<DiskBackend>(s->disk_.get());
  std::vector<ChunkBackend*> order = {s->home_.get()};
  for (const BackendFactory& make : opt.backends) {
    ASSIGN_OR_RETURN(std::unique_ptr<ChunkBackend> b, make(BackendContext{s->geo_, so.fingerprint}));
    order.push_back(b.get());
    s->below_.push_back(std::move(b));
  }
  RETURN_IF_ERROR(s->Recover(committed, so.fingerprint));
  TierOptions tiers = opt.tiers;
  tiers.device = model.device();
  if (s->geo_.codec != KvCodec::kNone) {  // host levels hold chunks as the disk does: encoded
    for (CacheLevel& level : tiers.levels) level.encoded = !level.on_device;
    tiers.decode = [geo = s->geo_, type = s->kv_type_, device = model.device()](ChunkKv* kv) {
      DecodeChunkKv(geo, type, device, kv);
    };
    tiers.decoded_bytes = 2 * s->geo_.chunk_tokens * s->geo_.kv_heads * s->geo_.head_dim *
                          static_cast<int64_t>(c10::elementSize(s->kv_type_));
  }
  ASSIGN_OR_RETURN(s->cache_, TieredCache::Create(tiers));
  PrefixIndex* index = &s->index_;
  s->cache_->SetPinned([index](uint64_t key) { return index->IsPinned(key >> 12); });
  s->reader_ = std::make_unique<ChunkReader>(ChunkReaderOptions{s->geo_, s->kv_type_, model.device(), model.dtype()},
                                             s->cache_.get(), order, &s->load_stream_);
  ChunkBackend* below = s->below_.empty() ? nullptr : s->below_.front().get();
  s->reorderer_ = std::make_unique<Reorderer>(ReorderContext{&s->index_, s->disk_.get(), s->reader_.get(),
                                                             s->cache_.get(), below, &s->commit_mu_, s->geo_, s->kv_type_});
  return s;
}

Status PrefixStore::Recover(const std::vector<std::string>& committed, const std::string& fingerprint) {
  RadixTree& tree = index_.tree();  // no other thread has the store yet
  for (const auto& meta : committed)  // rebuild the tree: same inserts and reorders, same chunk ids
    RETURN_IF_ERROR(ReplayRecord(meta, geo_.layers, &tree).WithContext(opt_.dir + "/log"));
  // What the tree does not reach is garbage an earlier session left: copies
  // replaced while still leased, dropped by a split after its last pass, or
  // superseded by a session that started in token order. Freeing it is
  // housekeeping: a failure (a full disk, no holes) leaves it allocated.
  tree.TakeRetired();
  CompactStats freed;
  if (FreeUnreachable(tree, disk_.get(), &freed).ok() && freed.chunks_freed > 0)
    (void)disk_->RewriteLog(nullptr, nullptr);  // their records too; on failure the old log stands
  log_rewritten_at_ = disk_->LogBytes();
  for (const auto& b : below_) {  // what the index holds, so that the backends can name it
    for (RadixTree::Node* n : tree.Nodes()) {
      ChunkPut known;
      known.tokens = tree.PathTo(n);
      known.ids = tree.MatchPrefix(known.tokens).chunks;
      b->Known(known);
      if (!n->reordered) continue;
      bool on_disk = false;  // a copy this machine keeps below, not on its disk
      for (uint64_t id : n->reordered->chunks) on_disk = on_disk || disk_->Has(id, 0);
      if (on_disk) continue;
      ChunkPut copy;
      copy.source = n->chunks, copy.order = &n->reordered->order, copy.copy_first = n->reordered->chunks.front();
      b->Known(copy);
    }
  }
  if (!opt_.stored_copies) {  // start in token order; the copies stay on disk for later sessions
    for (RadixTree::Node* n : tree.Nodes()) tree.SetReordered(n, nullptr);
    tree.TakeRetired();
  }
  return Status::OK();
}

void PrefixStore::ForgetRetiredLocked() {
  for (uint64_t c : index_.RetireLocked())
    for (int l = 0; l < geo_.layers; ++l) cache_->Erase(ChunkReader::CacheKey(c, l));
}

Status PrefixStore::FreeRetired(FreeStats* stats) {
  std::vector<uint64_t> now;
  {
    std::lock_guard<OwnedMutex> lock(index_.mu());
    ForgetRetiredLocked();
    now = index_.TakeFreeableLocked();
  }
  Status s = disk_->Free(now, stats);
  if (!s.ok()) {
    // Nothing was logged, so the chunks are still stored: the next call tries
    // again. (Free having logged but failed to punch, the ids are no longer
    // stored and the retry skips them; `store compact` reclaims the space.)
    std::lock_guard<OwnedMutex> lock(index_.mu());
    index_.AddUnfreedLocked(now);
  }
  return s;
}

PrefixLease PrefixStore::Acquire(const std::vector<int32_t>& prefix, int64_t max_tokens) {
  if (!below_.empty()) {
    // A failure to log the adoption leaves the index as it was: the request
    // computes what the backend had.
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(prefix.size()), max_tokens));
    (void)Discover(std::vector<int32_t>(prefix.begin(), prefix.begin() + n));
  }
  std::lock_guard<OwnedMutex> lock(index_.mu());
  ForgetRetiredLocked();
  return index_.AcquireLocked(prefix, max_tokens);
}

Status PrefixStore::Reorder(const ReorderOptions& opt, ReorderStats* stats) {
  RETURN_IF_ERROR(reorderer_->Pass(opt, stats));
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

ReorderFootprint PrefixStore::Footprint() const {
  std::lock_guard<OwnedMutex> lock(index_.mu());
  ReorderFootprint f;
  for (RadixTree::Node* n : index_.tree().Nodes()) {
    if (n->reordered)
      for (const auto& o : n->reordered->order) f.mapping_bytes += static_cast<int64_t>(o.size() * sizeof(int32_t));
    for (const auto& h : n->history) f.history_bytes += static_cast<int64_t>(h.size() * sizeof(float));
    f.chunk_bytes += static_cast<int64_t>(n->chunks.size()) * geo_.layers * chunk_kv_bytes();
  }
  f.score_bytes = cache_->score_bytes();
  return f;
}

StatusOr<int64_t> PrefixStore::Discover(const std::vector<int32_t>& tokens) {
  const int64_t c = geo_.chunk_tokens;
  for (const auto& b : below_) {
    int64_t matched;
    uint64_t parent = 0;
    {
      std::lock_guard<OwnedMutex> lock(index_.mu());
      const RadixTree::Match m = index_.tree().MatchPrefix(tokens);
      matched = static_cast<int64_t>(m.chunks.size());
      if (matched > 0) parent = m.chunks.back();
    }
    if (matched >= static_cast<int64_t>(tokens.size()) / c) return int64_t{0};  // nothing past the local match
    // The backend is asked with no lock held: requests and commits go on.
    // Adopting takes the commit lock, which keeps the tree's logged shape as
    // it was, and adopts nothing if a commit changed the match meanwhile.
    auto adopt = [&](int64_t found) -> StatusOr<std::vector<uint64_t>> {
      std::lock_guard<std::mutex> commit(commit_mu_);
      const std::vector<int32_t> whole(tokens.begin(), tokens.begin() + (matched + found) * c);
      uint64_t first;
      {
        std::lock_guard<OwnedMutex> lock(index_.mu());
        const RadixTree::Match now = index_.tree().MatchPrefix(tokens);
        if (static_cast<int64_t>(now.chunks.size()) != matched || (matched > 0 && now.chunks.back() != parent))
          return std::vector<uint64_t>{};
        first = index_.tree().ReserveChunkIds(static_cast<size_t>(found));
      }
      RETURN_IF_ERROR(disk_->Commit({}, InsertRecord(whole, first)));  // the index's record; the data stays below
      std::lock_guard<OwnedMutex> lock(index_.mu());
      const std::vector<uint64_t> ids = index_.tree().Insert(whole, first);
      return std::vector<uint64_t>(ids.begin() + matched, ids.end());
    };
    ASSIGN_OR_RETURN(const int64_t found, b->Discover(tokens, matched, parent, adopt));
    if (found > 0) return found;
  }
  return int64_t{0};
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
  std::vector<ChunkBackend*> all = {home_.get()};
  for (const auto& b : below_) all.push_back(b.get());
  // A reordered copy that failed a read anywhere is dropped: requests read
  // the node's own chunks, healed below when they failed too. The backends
  // are asked without the index's mutex.
  std::vector<RadixTree::Node*> drop;
  for (const auto& [node, copy] : copies) {
    bool failed = false;
    for (ChunkBackend* b : all) {
      const std::vector<uint64_t> lost = b->Lost(copy->chunks);
      b->ForgetLost(lost);
      failed = failed || !lost.empty();
    }
    if (failed) drop.push_back(node);
  }
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
  std::set<uint64_t> lost;
  for (ChunkBackend* b : all)
    for (uint64_t id : b->Lost(held))
      if (b == home_.get() || !disk_->Has(id, 0)) lost.insert(id);
  if (lost.empty()) return stats;
  ChunkWrites w;
  for (int l = 0; l < geo_.layers; ++l)
    for (size_t i = 0; i < held.size(); ++i) {
      if (!lost.count(held[i])) continue;
      auto kvp = HostChunks(kv, l, static_cast<int64_t>(i), 1, 0);
      AddWrite(held[i], l, static_cast<int64_t>(i), kvp[0], kvp[1], kvp[2], &w);
    }
  RETURN_IF_ERROR(disk_->Replace(w.writes, FillRecord(), nullptr));
  const std::vector<uint64_t> ids(lost.begin(), lost.end());
  for (ChunkBackend* b : all) b->ForgetLost(ids);
  stats.chunks_written = static_cast<int64_t>(ids.size());
  return stats;
}

void PrefixStore::AddWrite(uint64_t id, int l, int64_t index, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& p, ChunkWrites* w) const {
  const EncodedChunk& e = w->encoded.emplace_back(EncodeChunk(ChunkCodec(geo_.codec, index), k, v, p));
  w->writes.push_back({id, l, e.bytes[0].data_ptr(), e.bytes[1].data_ptr(), e.bytes[2].data_ptr(), e.codec});
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
    std::vector<at::Tensor> keep;  // per layer keys, values, probe keys (for the backends below)
    ChunkWrites w;
    for (int l = 0; l < geo_.layers; ++l) {
      auto [k, v, p] = HostChunks(kv, l, matched, n, kv_offset);
      keep.insert(keep.end(), {k, v, p});
      for (int64_t i = 0; i < n; ++i)  // ids are placeholders until the commit lock reserves them
        AddWrite(static_cast<uint64_t>(i), l, matched + i, k.narrow(0, i * c, c), v.narrow(0, i * c, c),
                 p.narrow(0, i * c, c), &w);
    }
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
      for (ChunkWrite& x : w.writes) x.chunk_id += first_id;
      RETURN_IF_ERROR(disk_->Commit(w.writes, InsertRecord(whole, first_id)));
      std::lock_guard<OwnedMutex> lock(index_.mu());
      ids = index_.tree().Insert(whole, first_id);
      IMPRESS_CHECK(ids.size() == static_cast<size_t>(total) && ids[matched] == first_id);
    }
    CacheInserted(w, std::vector<uint64_t>(ids.begin() + matched, ids.end()));
    if (!below_.empty()) PutBelow(std::move(whole), ids, matched, std::move(keep), w);
    return n;
  }
}

void PrefixStore::CacheInserted(const ChunkWrites& w, const std::vector<uint64_t>& added) {
  for (size_t j = 0; j < w.writes.size(); ++j) {
    // The caches hold what a read returns: the decoded parts, and the encoded ones.
    const EncodedChunk& e = w.encoded[j];
    EncodedKv enc;
    if (e.codec != KvCodec::kNone) enc = {e.bytes[0], e.bytes[1], e.codec};
    cache_->Put(ChunkReader::CacheKey(w.writes[j].chunk_id, w.writes[j].layer),
                ChunkKv{e.decoded[0].clone(), e.decoded[1].clone(), enc});
  }
  // The score policy places what Put holds once it is observed: computed,
  // never accessed (score 0), these land only where there is room.
  for (int l = 0; l < geo_.layers; ++l) reader_->ObserveWhole(added, l);
}

void PrefixStore::PutBelow(std::vector<int32_t> whole, const std::vector<uint64_t>& ids, int64_t matched,
                           std::vector<at::Tensor> keep, const ChunkWrites& w) {
  ChunkPut put;
  put.tokens = std::move(whole), put.ids = ids, put.first = static_cast<size_t>(matched);
  put.kv = std::make_shared<const std::vector<at::Tensor>>(std::move(keep));
  if (geo_.codec != KvCodec::kNone) {  // ChunkPut's order: (layer, chunk, part), as written
    auto parts = std::make_shared<std::vector<at::Tensor>>();
    for (const EncodedChunk& e : w.encoded) parts->insert(parts->end(), e.bytes.begin(), e.bytes.end());
    put.encoded = std::move(parts);
  }
  for (const auto& b : below_) b->Put(put, nullptr);
}

}  // namespace impress
