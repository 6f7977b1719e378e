#include "kvstore/prefix_store.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "kvstore/chunk_codec.h"
#include "kvstore/compaction.h"
#include "kvstore/store_log.h"
#include "model/model.h"
#include "store/env.h"

namespace impress {
PrefixStore::PrefixStore(const Model& model, const PrefixStoreOptions& opt)
    : model_(model), opt_(opt), index_(opt.chunk_tokens, model.config().num_layers), load_stream_(model.device()) {}

PrefixStore::~PrefixStore() = default;

StatusOr<std::unique_ptr<PrefixStore>> PrefixStore::Open(const Model& model, const PrefixStoreOptions& opt) {
  if (opt.chunk_tokens <= 0) return Status::InvalidArgument("--chunk must be positive");
  std::vector<CacheLevel> levels;
  std::vector<const StoreTier*> below;
  RETURN_IF_ERROR(SplitTiers(opt.tiers, &levels, &below));
  std::unique_ptr<PrefixStore> s(new PrefixStore(model, opt));
  ASSIGN_OR_RETURN(s->kv_type_, KvDtype(opt.kv_dtype));
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
  s->geo_ = s->disk_->geometry();  // with its digests where the store keeps them
  ASSIGN_OR_RETURN(s->backends_, Backends::Make(s->disk_.get(), below, BackendContext{s->geo_, so.fingerprint}));
  RETURN_IF_ERROR(s->Recover(committed, so.fingerprint));
  TierOptions tiers;
  tiers.levels = std::move(levels);
  tiers.policy = opt.policy;
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
  s->cache_->SetPinned([index](uint64_t key) { return index->IsPinned(ChunkKey::Unpack(key).chunk); });
  s->reader_ = std::make_unique<ChunkReader>(ChunkReaderOptions{s->geo_, s->kv_type_, model.device(), model.dtype()},
                                             s->cache_.get(), s->backends_.get(), &s->load_stream_);
  s->reorderer_ = std::make_unique<Reorderer>(ReorderContext{&s->index_, s->disk_.get(), s->backends_.get(),
                                                             s->cache_.get(), &s->commit_mu_, s->geo_, s->kv_type_});
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
  backends_->TellKnown(tree);  // what the index holds, so that the backends below can name it
  if (!opt_.stored_copies) {  // start in token order; the copies stay on disk for later sessions
    for (RadixTree::Node* n : tree.Nodes()) tree.SetReordered(n, nullptr);
    tree.TakeRetired();
  }
  return Status::OK();
}

void PrefixStore::ForgetRetiredLocked() {
  for (uint64_t c : index_.RetireLocked())
    for (int l = 0; l < geo_.layers; ++l) cache_->Erase(ChunkKey{c, l}.packed());
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

int64_t PrefixStore::NewChunks(const std::vector<int32_t>& tokens) const {
  std::lock_guard<OwnedMutex> lock(index_.mu());
  return index_.tree().NewChunks(tokens);
}

PrefixLease PrefixStore::Acquire(const std::vector<int32_t>& prefix, int64_t max_tokens) {
  if (backends_->has_below()) {
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
  ReorderFootprint f = index_.Footprint(chunk_kv_bytes());
  f.score_bytes = cache_->score_bytes();
  return f;
}

StatusOr<int64_t> PrefixStore::Discover(const std::vector<int32_t>& tokens) {
  const int64_t c = geo_.chunk_tokens;
  int64_t matched;
  uint64_t parent = 0;
  {
    std::lock_guard<OwnedMutex> lock(index_.mu());
    const RadixTree::Match m = index_.tree().MatchPrefix(tokens);
    matched = static_cast<int64_t>(m.chunks.size());
    if (matched > 0) parent = m.chunks.back();
  }
  if (matched >= static_cast<int64_t>(tokens.size()) / c) return int64_t{0};  // nothing past the local match
  // The backends are asked with no lock held: requests and commits go on.
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
  return backends_->Discover(tokens, matched, parent, adopt);
}

}  // namespace impress
