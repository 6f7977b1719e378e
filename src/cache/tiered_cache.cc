#include "cache/tiered_cache.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>


namespace impress {
namespace {

// The caller's stream waits (on the device) for an entry's copy up.
void AwaitCopy(const ChunkKv& kv) {
  if (kv.ready)
    static_cast<at::cuda::CUDAEvent*>(kv.ready.get())->block(c10::cuda::getCurrentCUDAStream(kv.k.device().index()));
}

}  // namespace

StatusOr<std::unique_ptr<TieredCache>> TieredCache::Create(const TierOptions& opt) {
  if (opt.gpu_bytes < 0 || opt.cpu_bytes < 0) return Status::InvalidArgument("cache capacities must not be negative");
  auto c = std::unique_ptr<TieredCache>(new TieredCache());
  c->opt_ = opt;
  c->placement_ = MakePlacement(opt.policy);
  c->levels_.resize(kCacheTiers);
  for (Level& l : c->levels_) l.policy = c->placement_->NewRanking();
  if (opt.h2d_bytes_per_second > 0) c->h2d_ = std::make_unique<Pacer>(opt.h2d_bytes_per_second);
  return c;
}

ChunkKv TieredCache::ToTier(const ChunkKv& kv, int t, int64_t* h2d) {
  at::Device dev = t == 0 ? opt_.gpu_device : at::Device(at::kCPU);
  // Up from pinned memory the copy is only enqueued on the caller's stream,
  // and the entry carries the event after it; down, the copy waits for the
  // entry's copy up and is complete when it returns.
  AwaitCopy(kv);
  const bool async = t == 0 && dev.is_cuda() && kv.k.is_pinned() && kv.v.is_pinned();
  ChunkKv out{kv.k.to(dev, async), kv.v.to(dev, async)};
  if (async) {
    auto e = std::make_shared<at::cuda::CUDAEvent>();
    e->record(c10::cuda::getCurrentCUDAStream(dev.index()));
    out.ready = std::move(e);
  }
  if (t == 1 && opt_.gpu_device.is_cuda()) {  // the CPU tier is pinned under CUDA, for fast copies up
    out.k = out.k.pin_memory();
    out.v = out.v.pin_memory();
  }
  if (t == 0 && kv.k.device() != dev) *h2d += out.bytes();
  if (t == 0 && opt_.gpu_device.is_cpu()) {  // emulated device pool: a copy, as a transfer would make
    out.k = out.k.clone();
    out.v = out.v.clone();
    *h2d += out.bytes();
  }
  return out;
}

void TieredCache::PaceCopy(int64_t bytes) {
  if (h2d_ != nullptr && bytes > 0) h2d_->Wait(static_cast<size_t>(bytes));
}

ChunkKv TieredCache::TakeLocked(int t, uint64_t key) {
  Level& L = levels_[t];
  auto it = L.entries.find(key);
  ChunkKv kv = std::move(it->second);
  L.policy->Erase(key);
  L.entries.erase(it);
  L.used -= kv.bytes();
  return kv;
}

bool TieredCache::InsertLocked(int t, uint64_t key, ChunkKv kv) {
  Level& L = levels_[t];
  const int64_t cap = capacity(static_cast<Tier>(t));
  if (kv.bytes() > cap) return false;
  while (L.used + kv.bytes() > cap) {
    auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
    if (!victim) return false;  // everything left is in use
    ChunkKv out = TakeLocked(t, *victim);
    if (t + 1 < kCacheTiers) InsertLocked(t + 1, *victim, ToTier(out, t + 1, nullptr));  // demote; dropped if it does not fit
  }
  L.used += kv.bytes();
  L.entries.emplace(key, std::move(kv));
  L.policy->Insert(key);
  return true;
}

bool TieredCache::AdmitLocked(int t, uint64_t key, int64_t bytes) const {
  const Level& L = levels_[t];
  if (L.used + bytes <= capacity(static_cast<Tier>(t))) return true;
  auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
  return victim && placement_->Admits(key, *victim);
}

std::optional<ChunkKv> TieredCache::Get(uint64_t key, Tier* tier) {
  int64_t h2d = 0;
  std::optional<ChunkKv> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (placement_->Accessed(key)) RerankLocked(key);
    *tier = Tier::kDisk;
    for (int t = 0; t < kCacheTiers && !out; ++t) {
      Level& L = levels_[t];
      auto it = L.entries.find(key);
      if (it == L.entries.end()) continue;
      counters_.hits[t]++;
      counters_.bytes_served[t] += it->second.bytes();
      *tier = static_cast<Tier>(t);
      if (t == 0) {
        L.policy->Touch(key);
        out = it->second;
        continue;
      }
      // A lower tier's hit moves to the top, unless the policy places it on observation.
      ChunkKv kv = TakeLocked(t, key);
      out = ToTier(kv, 0, &h2d);
      if (placement_->PlacesOnObserve() || !InsertLocked(0, key, *out)) InsertLocked(t, key, kv);
    }
    if (!out) counters_.misses++;
  }
  PaceCopy(h2d);
  if (out) AwaitCopy(*out);  // the caller's stream reads it after its copy up
  return out;
}

void TieredCache::RerankLocked(uint64_t key) {
  for (Level& L : levels_)
    if (L.entries.count(key)) L.policy->Touch(key);
}

bool TieredCache::Cached(uint64_t key) const {
  for (const Level& L : levels_)
    if (L.entries.count(key)) return true;
  return false;
}

void TieredCache::Put(uint64_t key, const ChunkKv& kv) {
  int64_t h2d = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Cached(key)) return;
    if (placement_->PlacesOnObserve()) {
      // Every caller observes what it put; this only bounds a caller that failed to.
      if (pending_.size() > (1u << 12)) pending_.clear();
      pending_[key] = kv;
      return;
    }
    if (!InsertLocked(0, key, ToTier(kv, 0, &h2d))) InsertLocked(1, key, ToTier(kv, 1, nullptr));
  }
  PaceCopy(h2d);
}

void TieredCache::PutIn(uint64_t key, const ChunkKv& kv, Tier top) {
  int64_t h2d = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Cached(key)) return;
    const bool on_gpu = top == Tier::kGpu && InsertLocked(0, key, ToTier(kv, 0, &h2d));
    if (!on_gpu && top != Tier::kDisk) InsertLocked(1, key, ToTier(kv, 1, nullptr));
  }
  PaceCopy(h2d);
}

void TieredCache::Observe(const std::vector<std::pair<uint64_t, double>>& important_shares) {
  if (!placement_->PlacesOnObserve()) return;
  int64_t h2d = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, share] : important_shares) {
      placement_->Observed(key, share);
      RerankLocked(key);
      auto p = pending_.find(key);
      if (p != pending_.end()) {  // read from disk: the highest tier that admits it
        ChunkKv kv = std::move(p->second);
        pending_.erase(p);
        if (AdmitLocked(0, key, kv.bytes()) && InsertLocked(0, key, ToTier(kv, 0, &h2d))) continue;
        if (AdmitLocked(1, key, kv.bytes())) InsertLocked(1, key, ToTier(kv, 1, nullptr));
        continue;
      }
      if (levels_[1].entries.count(key) && AdmitLocked(0, key, levels_[1].entries.at(key).bytes())) {
        // A CPU hit that beats the GPU tier's next victim replaces it; the loser goes down.
        ChunkKv kv = TakeLocked(1, key);
        if (!InsertLocked(0, key, ToTier(kv, 0, &h2d))) InsertLocked(1, key, kv);
      }
    }
  }
  PaceCopy(h2d);
}

void TieredCache::TransferScores(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) {
  std::lock_guard<std::mutex> lock(mu_);
  placement_->Transfer(from, to);
}

int64_t TieredCache::score_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return placement_->bytes();
}

Tier TieredCache::Where(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int t = 0; t < kCacheTiers; ++t)
    if (levels_[t].entries.count(key)) return static_cast<Tier>(t);
  return Tier::kDisk;
}

void TieredCache::Erase(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(key);
  for (Level& L : levels_) {
    auto it = L.entries.find(key);
    if (it == L.entries.end()) continue;
    L.used -= it->second.bytes();
    L.policy->Erase(key);
    L.entries.erase(it);
  }
}

void TieredCache::RecordRead(Tier tier, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.bytes_served[tier] += bytes;
}

CacheCounters TieredCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

int64_t TieredCache::used(Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  return levels_[static_cast<int>(t)].used;
}

bool TieredCache::Contains(uint64_t key, Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  return levels_[static_cast<int>(t)].entries.count(key) > 0;
}

size_t TieredCache::entries(Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  return levels_[static_cast<int>(t)].entries.size();
}

}  // namespace impress
