#include "cache/tiered_cache.h"

#include <ATen/ATen.h>

#include <chrono>
#include <thread>

namespace impress {

StatusOr<std::unique_ptr<TieredCache>> TieredCache::Create(const TierOptions& opt) {
  if (opt.gpu_bytes < 0 || opt.cpu_bytes < 0) return Status::InvalidArgument("cache capacities must not be negative");
  auto c = std::unique_ptr<TieredCache>(new TieredCache());
  c->opt_ = opt;
  if (opt.policy == "score") {
    c->scores_ = std::make_unique<ChunkScores>();
    for (auto& l : c->levels_) l.policy = std::make_unique<ScorePolicy>(c->scores_.get());
    return c;
  }
  for (auto& l : c->levels_) {
    ASSIGN_OR_RETURN(l.policy, MakePolicy(opt.policy));
  }
  return c;
}

ChunkKv TieredCache::ToTier(const ChunkKv& kv, int t) {
  at::Device dev = t == 0 ? opt_.gpu_device : at::Device(at::kCPU);
  ChunkKv out{kv.k.to(dev), kv.v.to(dev)};
  if (t == 1 && opt_.gpu_device.is_cuda()) {  // the CPU tier is pinned under CUDA, for fast copies up
    out.k = out.k.pin_memory();
    out.v = out.v.pin_memory();
  }
  if (t == 0 && opt_.h2d_bytes_per_second > 0 && kv.k.device() != dev)
    std::this_thread::sleep_for(std::chrono::duration<double>(out.bytes() / opt_.h2d_bytes_per_second));
  if (t == 0 && opt_.gpu_device.is_cpu()) {  // emulated device pool: a copy, as a transfer would make
    out.k = out.k.clone();
    out.v = out.v.clone();
    if (opt_.h2d_bytes_per_second > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(out.bytes() / opt_.h2d_bytes_per_second));
  }
  return out;
}

bool TieredCache::InsertLocked(int t, uint64_t key, ChunkKv kv) {
  Level& L = levels_[t];
  const int64_t cap = capacity(static_cast<Tier>(t));
  if (kv.bytes() > cap) return false;
  while (L.used + kv.bytes() > cap) {
    auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
    if (!victim) return false;  // everything left is in use
    ChunkKv out = std::move(L.entries.at(*victim));
    L.policy->Erase(*victim);
    L.entries.erase(*victim);
    L.used -= out.bytes();
    if (t == 0) InsertLocked(1, *victim, ToTier(out, 1));  // demote; dropped if it does not fit
  }
  L.used += kv.bytes();
  L.entries.emplace(key, std::move(kv));
  L.policy->Insert(key);
  return true;
}

bool TieredCache::AdmitLocked(int t, uint64_t key, int64_t bytes) const {
  if (!scored()) return true;
  const Level& L = levels_[t];
  if (L.used + bytes <= capacity(static_cast<Tier>(t))) return true;
  auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
  return victim && scores_->Score(key) > scores_->Score(*victim);
}

std::optional<ChunkKv> TieredCache::Get(uint64_t key, Tier* tier) {
  std::lock_guard<std::mutex> lock(mu_);
  if (scored()) {
    scores_->Access(key);
    for (Level& L : levels_)
      if (L.entries.count(key)) L.policy->Touch(key);
  }
  auto g = levels_[0].entries.find(key);
  if (g != levels_[0].entries.end()) {
    levels_[0].policy->Touch(key);
    counters_.hits[0]++;
    counters_.bytes_served[0] += g->second.bytes();
    *tier = Tier::kGpu;
    return g->second;
  }
  auto c = levels_[1].entries.find(key);
  if (c != levels_[1].entries.end()) {
    ChunkKv kv = std::move(c->second);
    levels_[1].policy->Erase(key);
    levels_[1].entries.erase(c);
    levels_[1].used -= kv.bytes();
    counters_.hits[1]++;
    counters_.bytes_served[1] += kv.bytes();
    *tier = Tier::kCpu;
    ChunkKv on_gpu = ToTier(kv, 0);
    // Under the score policy it stays in the CPU tier until Observe.
    if (scored() || !InsertLocked(0, key, on_gpu)) InsertLocked(1, key, kv);
    return on_gpu;
  }
  counters_.misses++;
  *tier = Tier::kDisk;
  return std::nullopt;
}

void TieredCache::Put(uint64_t key, const ChunkKv& kv) {
  std::lock_guard<std::mutex> lock(mu_);
  if (levels_[0].entries.count(key) || levels_[1].entries.count(key)) return;
  if (scored()) {
    // Every caller observes what it put; this only bounds a caller that failed to.
    if (pending_.size() > (1u << 12)) pending_.clear();
    pending_[key] = kv;
    return;
  }
  if (!InsertLocked(0, key, ToTier(kv, 0))) InsertLocked(1, key, ToTier(kv, 1));
}

void TieredCache::PutIn(uint64_t key, const ChunkKv& kv, Tier top) {
  std::lock_guard<std::mutex> lock(mu_);
  if (levels_[0].entries.count(key) || levels_[1].entries.count(key)) return;
  if (top == Tier::kGpu && InsertLocked(0, key, ToTier(kv, 0))) return;
  if (top != Tier::kDisk) InsertLocked(1, key, ToTier(kv, 1));
}

void TieredCache::Observe(const std::vector<std::pair<uint64_t, double>>& important_shares) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!scored()) return;
  for (const auto& [key, share] : important_shares) {
    scores_->Important(key, share);
    for (Level& L : levels_)
      if (L.entries.count(key)) L.policy->Touch(key);
    auto p = pending_.find(key);
    if (p != pending_.end()) {  // read from disk: the highest tier whose lowest score it beats
      ChunkKv kv = std::move(p->second);
      pending_.erase(p);
      if (AdmitLocked(0, key, kv.bytes()) && InsertLocked(0, key, ToTier(kv, 0))) continue;
      if (AdmitLocked(1, key, kv.bytes())) InsertLocked(1, key, ToTier(kv, 1));
      continue;
    }
    auto c = levels_[1].entries.find(key);
    if (c != levels_[1].entries.end() && AdmitLocked(0, key, c->second.bytes())) {
      // A CPU hit that beats the GPU tier's lowest replaces it; the loser goes down.
      ChunkKv kv = std::move(c->second);
      levels_[1].policy->Erase(key);
      levels_[1].entries.erase(c);
      levels_[1].used -= kv.bytes();
      if (!InsertLocked(0, key, ToTier(kv, 0))) InsertLocked(1, key, kv);
    }
  }
}

void TieredCache::TransferScores(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (scored()) scores_->Transfer(from, to);
}

int64_t TieredCache::score_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scored() ? scores_->bytes() : 0;
}

Tier TieredCache::Where(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (levels_[0].entries.count(key)) return Tier::kGpu;
  if (levels_[1].entries.count(key)) return Tier::kCpu;
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

void TieredCache::RecordDiskRead(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.bytes_served[2] += bytes;
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
