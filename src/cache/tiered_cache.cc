#include "cache/tiered_cache.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "common/device_copy.h"
#include "common/status.h"


namespace impress {
namespace {

// The caller's stream waits (on the device) for an entry's asynchronous copy.
void AwaitCopy(const ChunkKv& kv, const at::Device& device) {
  if (kv.ready)
    static_cast<at::cuda::CUDAEvent*>(kv.ready.get())->block(c10::cuda::getCurrentCUDAStream(device.index()));
}

}  // namespace

std::vector<CacheLevel> CacheLevels(const TierCounts& bytes, double h2d_bytes_per_second) {
  std::vector<CacheLevel> levels;
  for (Tier t : kTiers) {
    if (!IsCacheTier(t)) continue;
    CacheLevel& l = levels.emplace_back();
    l.tier = t;
    l.capacity = bytes[t];
    l.on_device = levels.size() == 1;
    l.pinned = !l.on_device;
    l.copy_in_bytes_per_second = l.on_device ? h2d_bytes_per_second : 0;
  }
  return levels;
}

StatusOr<std::unique_ptr<TieredCache>> TieredCache::Create(const TierOptions& opt) {
  auto c = std::unique_ptr<TieredCache>(new TieredCache());
  c->opt_ = opt;
  c->placement_ = MakePlacement(opt.policy);
  for (const CacheLevel& o : opt.levels) {
    if (o.capacity < 0) return Status::InvalidArgument("cache capacities must not be negative");
    if (!c->levels_.empty() && o.tier <= c->levels_.back().opt.tier)
      return Status::InvalidArgument(std::string("cache levels must be distinct tiers, fastest first (") +
                                     TierName(o.tier) + " after " + TierName(c->levels_.back().opt.tier) + ")");
    if (o.encoded && (o.on_device || !opt.decode || opt.decoded_bytes <= 0))
      return Status::InvalidArgument("an encoded cache level must be in host memory, with a decoder");
    Level& l = c->levels_.emplace_back();
    l.opt = o;
    l.policy = c->placement_->NewRanking();
    if (o.copy_in_bytes_per_second > 0) l.copy_in = std::make_unique<Pacer>(o.copy_in_bytes_per_second);
  }
  return c;
}

int TieredCache::LevelOf(Tier t) const {
  for (size_t i = 0; i < levels_.size(); ++i)
    if (levels_[i].opt.tier == t) return static_cast<int>(i);
  return -1;
}

ChunkKv TieredCache::ToTier(const ChunkKv& in, int t, Copies* copies) {
  const CacheLevel& L = levels_[t].opt;
  const at::Device device = opt_.device;
  const bool cuda = device.is_cuda();
  if (L.encoded && in.enc.holds_kv()) {  // the bytes as stored: nothing to copy or decode
    ChunkKv out;
    out.enc = in.enc;
    if (L.pinned && cuda)
      for (int part : {0, 1}) out.enc.bytes[part] = out.enc.bytes[part].pin_memory();
    return out;
  }
  ChunkKv kv = in;
  const bool decoded = !kv.k.defined();
  if (decoded) opt_.decode(&kv);  // out of an encoded level: decoded here, once, into new memory
  AwaitCopy(kv, device);  // this stream reads the entry after its own copy
  if (!L.on_device) {
    if (kv.host_k.defined()) return ChunkKv{kv.host_k, kv.host_v, kv.enc};  // where its copy up came from
    if (kv.k.is_cuda()) {
      // Down into pinned memory, enqueued on this stream; the device memory
      // is not reused before the copy has read it.
      const auto pinned = kv.k.options().device(at::kCPU).pinned_memory(true);
      ChunkKv out{at::empty(kv.k.sizes(), pinned), at::empty(kv.v.sizes(), pinned), kv.enc};
      out.k.copy_(kv.k, /*non_blocking=*/true);
      out.v.copy_(kv.v, /*non_blocking=*/true);
      const c10::Stream stream = c10::cuda::getCurrentCUDAStream(device.index());
      kv.k.record_stream(stream);
      kv.v.record_stream(stream);
      out.ready = StreamPoint(device);
      return out;
    }
    ChunkKv out{kv.k, kv.v, kv.enc};
    out.ready = kv.ready;
    if (L.pinned && cuda) {
      out.k = out.k.pin_memory();
      out.v = out.v.pin_memory();
    }
    return out;
  }
  // Up from pinned memory the copy is only enqueued on the caller's stream,
  // and the entry carries the event after it.
  const bool up = !OnDevice(kv.k, device);
  const bool async = up && cuda && kv.k.is_pinned() && kv.v.is_pinned();
  ChunkKv out{kv.k.to(device, async), kv.v.to(device, async), kv.enc};  // the encoded bytes stay on the host
  if (async) out.ready = StreamPoint(device);
  else if (!up) out.ready = kv.ready;  // already on the device: still after its own copy up
  const bool emulated = device.is_cpu();  // the emulated device pool: a copy, as a transfer would make
  if (emulated && !decoded) {
    out.k = out.k.clone();
    out.v = out.v.clone();
  }
  // A chunk the reader sent up has crossed the link (RecordRead); on CUDA it is on the device already.
  if (copies != nullptr && (up || emulated) && !kv.sent_up) (*copies)[t] += out.bytes();
  return out;
}

void TieredCache::Hold(std::unordered_map<uint64_t, ChunkKv>* held, uint64_t key, ChunkKv kv) {
  if (held->size() > kMaxHeld) held->clear();  // every caller observes; this only bounds one that failed to
  (*held)[key] = std::move(kv);
}

std::optional<ChunkKv> TieredCache::Release(std::unordered_map<uint64_t, ChunkKv>* held, uint64_t key) {
  auto it = held->find(key);
  if (it == held->end()) return std::nullopt;
  ChunkKv kv = std::move(it->second);
  held->erase(it);
  return kv;
}

void TieredCache::PaceCopies(const Copies& copies) {
  int64_t up = 0;  // what crosses the link; most calls (a top level's hit) have nothing to count
  for (size_t t = 0; t < levels_.size(); ++t)
    if (levels_[t].opt.on_device) up += copies[t];
  if (up > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.bytes_up += up;
  }
  for (size_t t = 0; t < levels_.size(); ++t)
    if (levels_[t].copy_in != nullptr && copies[t] > 0) levels_[t].copy_in->Wait(static_cast<size_t>(copies[t]));
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

bool TieredCache::MakeRoomLocked(int t, int64_t bytes) {
  Level& L = levels_[t];
  const int64_t cap = L.opt.capacity;
  if (bytes > cap) return false;
  while (L.used + bytes > cap) {
    auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
    if (!victim) return false;  // everything left is in use
    ChunkKv out = TakeLocked(t, *victim);
    const int down = t + 1;
    if (down < static_cast<int>(levels_.size())) CopyInLocked(down, *victim, out, nullptr);  // dropped if it does not fit
  }
  return true;
}

bool TieredCache::InsertLocked(int t, uint64_t key, ChunkKv kv) {
  if (!MakeRoomLocked(t, kv.bytes())) return false;
  Level& L = levels_[t];
  L.used += kv.bytes();
  L.entries.emplace(key, std::move(kv));
  L.policy->Insert(key);
  return true;
}

int64_t TieredCache::BytesIn(const ChunkKv& kv, int t) const {
  if (levels_[t].opt.encoded && kv.enc.holds_kv()) return kv.enc.kv_bytes();
  return kv.k.defined() ? static_cast<int64_t>(kv.k.nbytes() + kv.v.nbytes()) : opt_.decoded_bytes;
}

bool TieredCache::CopyInLocked(int t, uint64_t key, const ChunkKv& kv, Copies* copies) {
  const int64_t bytes = BytesIn(kv, t);
  if (!MakeRoomLocked(t, bytes)) return false;
  ChunkKv in = ToTier(kv, t, copies);
  IMPRESS_CHECK(in.bytes() == bytes);
  return InsertLocked(t, key, std::move(in));  // there is room: nothing more is evicted
}

bool TieredCache::AdmitLocked(int t, uint64_t key, int64_t bytes) const {
  const Level& L = levels_[t];
  if (L.used + bytes <= L.opt.capacity) return true;
  auto victim = L.policy->Victim([&](uint64_t k) { return !pinned_(k); });
  return victim && placement_->Admits(key, *victim);
}

void TieredCache::PlaceLocked(int top, uint64_t key, const ChunkKv& kv, Copies* copies) {
  for (int t = top; t < static_cast<int>(levels_.size()); ++t)
    if (CopyInLocked(t, key, kv, copies)) return;
}

std::optional<ChunkKv> TieredCache::Get(uint64_t key, Tier* tier, int64_t* bytes) {
  std::optional<ChunkKv> out;
  int from = 0;  // the level of the hit
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (placement_->Accessed(key)) RerankLocked(key);
    for (size_t t = 0; t < levels_.size() && !out; ++t) {
      Level& L = levels_[t];
      auto it = L.entries.find(key);
      if (it == L.entries.end()) continue;
      counters_.hits[L.opt.tier]++;
      counters_.bytes_served[L.opt.tier] += it->second.bytes();
      *tier = L.opt.tier;
      if (bytes != nullptr) *bytes = it->second.bytes();
      if (t == 0) L.policy->Touch(key);
      out = it->second;  // shares the entry's memory, which nothing writes
      from = static_cast<int>(t);
    }
    if (!out) {
      counters_.misses++;
      return out;
    }
  }
  Copies copies{};
  if (from > 0) {
    // What is served goes up: copied, and decoded out of an encoded level,
    // with no lock held. Then, under it again, the hit is placed.
    out = ToTier(*out, 0, &copies);
    std::lock_guard<std::mutex> lock(mu_);
    if (placement_->PlacesOnObserve()) {
      Hold(&served_, key, *out);  // the hit stays in its level until its observation places it
    } else if (levels_[from].entries.count(key)) {  // it moves to the top, unless it left its level meanwhile
      ChunkKv kv = TakeLocked(from, key);
      if (!InsertLocked(0, key, *out)) InsertLocked(from, key, kv);
    }
  }
  PaceCopies(copies);
  if (!out->k.defined()) opt_.decode(&*out);  // served from a top level that holds it encoded; the entry stays so
  AwaitCopy(*out, opt_.device);  // the caller's stream reads it after its copy up
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
  Copies copies{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Cached(key)) return;
    if (placement_->PlacesOnObserve()) {
      Hold(&pending_, key, kv);
      return;
    }
    PlaceLocked(0, key, kv, &copies);
  }
  PaceCopies(copies);
}

void TieredCache::PutIn(uint64_t key, const ChunkKv& kv, Tier top) {
  Copies copies{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int t = LevelOf(top);
    if (t < 0 || Cached(key)) return;
    PlaceLocked(t, key, kv, &copies);
  }
  PaceCopies(copies);
}

void TieredCache::Observe(const std::vector<std::pair<uint64_t, double>>& important_shares) {
  if (!placement_->PlacesOnObserve()) return;
  Copies copies{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, share] : important_shares) {
      placement_->Observed(key, share);
      RerankLocked(key);
      std::optional<ChunkKv> served = Release(&served_, key);  // a lower level's hit, as Get served it
      if (std::optional<ChunkKv> read = Release(&pending_, key)) {  // read from below: the highest level that admits it
        for (size_t t = 0; t < levels_.size(); ++t)
          if (AdmitLocked(t, key, read->bytes()) && CopyInLocked(t, key, *read, &copies)) break;
        continue;
      }
      // A lower level's hit that beats the top level's next victim replaces
      // it (the loser goes down), as served when Get served it.
      for (size_t t = 1; t < levels_.size(); ++t) {
        auto hit = levels_[t].entries.find(key);
        if (hit == levels_[t].entries.end()) continue;
        if (AdmitLocked(0, key, hit->second.bytes())) {
          ChunkKv kv = TakeLocked(t, key);
          const bool moved = served ? InsertLocked(0, key, std::move(*served)) : CopyInLocked(0, key, kv, &copies);
          if (!moved) InsertLocked(t, key, kv);
        }
        break;
      }
    }
  }
  PaceCopies(copies);
}

void TieredCache::TransferScores(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) {
  std::lock_guard<std::mutex> lock(mu_);
  placement_->Transfer(from, to);
}

int64_t TieredCache::score_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return placement_->bytes();
}

std::optional<Tier> TieredCache::Where(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Level& L : levels_)
    if (L.entries.count(key)) return L.opt.tier;
  return std::nullopt;
}

void TieredCache::Erase(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(key);
  served_.erase(key);
  for (Level& L : levels_) {
    auto it = L.entries.find(key);
    if (it == L.entries.end()) continue;
    L.used -= it->second.bytes();
    L.policy->Erase(key);
    L.entries.erase(it);
  }
}

void TieredCache::RecordRead(Tier tier, int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.bytes_served[tier] += bytes;
  }
  const auto device = std::find_if(levels_.begin(), levels_.end(), [](const Level& L) { return L.opt.on_device; });
  if (device == levels_.end()) return;  // no device level: no link to cross
  Copies up{};
  up[static_cast<size_t>(device - levels_.begin())] = bytes;  // the link the copy up takes
  PaceCopies(up);
}

CacheCounters TieredCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

int64_t TieredCache::capacity(Tier t) const {
  const int l = LevelOf(t);
  return l < 0 ? 0 : levels_[l].opt.capacity;
}

int64_t TieredCache::used(Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int l = LevelOf(t);
  return l < 0 ? 0 : levels_[l].used;
}

bool TieredCache::Contains(uint64_t key, Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int l = LevelOf(t);
  return l >= 0 && levels_[l].entries.count(key) > 0;
}

size_t TieredCache::entries(Tier t) const {
  std::lock_guard<std::mutex> lock(mu_);
  const int l = LevelOf(t);
  return l < 0 ? 0 : levels_[l].entries.size();
}

}  // namespace impress
