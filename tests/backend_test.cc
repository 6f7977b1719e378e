// Backends below the caches (kvstore/chunk_backend.h) and the store's locking
// contract: the reorder plan against the paper's definition without a store;
// a backend the engine knows only through the interface (an in-memory one
// here) serves a prefix another store computed, with the same logits; and no
// fsync or backend call runs with the index's mutex held.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <thread>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "kvstore/chunk_backend.h"
#include "kvstore/prefix_store.h"
#include "kvstore/reorderer.h"
#include "request/request.h"
#include "model/model.h"
#include "model_store_fixture.h"
#include "store_peer.h"

namespace impress {
namespace {

using testing::TempDir;

// docs/paper.md §2: tokens go to chunks by descending importance, and
// inside a chunk stay in token order.
TEST(ReorderPlan, MostImportantFirstTokenOrderInsideAChunk) {
  const std::vector<std::vector<float>> history = {{0, 5, 1, 7, 2, 6, 3, 4}, {8, 7, 6, 5, 4, 3, 2, 1}};
  ReorderPlan plan = PlanReorder(history, 2, 4, nullptr);
  ASSERT_EQ(plan.order.size(), 2u);
  EXPECT_EQ(plan.order[0], (std::vector<int32_t>{1, 3, 5, 7, 0, 2, 4, 6}));
  EXPECT_EQ(plan.order[1], (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(plan.moved, 4);  // tokens 5, 7 up and 0, 2 down in layer 0; layer 1 stays
  // Against the copy it made, the same history moves nothing.
  ReorderedChunks current{{10, 11}, plan.order};
  EXPECT_EQ(PlanReorder(history, 2, 4, &current).moved, 0);
}

// Whether the watched index mutexes are held where I/O happens.
struct LockWatch {
  std::vector<const OwnedMutex*> index;
  std::atomic<int> io{0}, under_lock{0};
  void Check() {
    io++;
    for (const OwnedMutex* m : index)
      if (m->HeldByMe()) under_lock++;
  }
};

class WatchedFile : public FileWrapper {
 public:
  WatchedFile(std::unique_ptr<File> f, LockWatch* w) : FileWrapper(std::move(f)), w_(w) {}
  Status Sync() override {
    w_->Check();
    return FileWrapper::Sync();
  }

 private:
  LockWatch* w_;
};

class WatchedEnv : public EnvWrapper {
 public:
  WatchedEnv(LockWatch* w) : EnvWrapper(Env::Default()), w_(w) {}
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, target()->Open(path, mode));
    return std::unique_ptr<File>(new WatchedFile(std::move(f), w_));
  }
  Status SyncDir(const std::string& dir) override {
    w_->Check();
    return target()->SyncDir(dir);
  }

 private:
  LockWatch* w_;
};

// An in-memory backend shared by several stores: chunks named by their
// tokens from the root, parts copied in and out.
struct MemoryChunks {
  std::mutex mu;
  std::map<std::vector<int32_t>, std::vector<std::array<std::vector<uint8_t>, 3>>> chunks;  // per layer: k, v, probe
};

class MemoryBackend final : public ChunkBackend {
 public:
  MemoryBackend(std::shared_ptr<MemoryChunks> m, const ChunkGeometry& g, LockWatch* w) : m_(m), g_(g), w_(w) {}
  Tier tier() const override { return Tier::kRemote; }
  bool Holds(uint64_t chunk, int layer) const override {
    std::lock_guard<std::mutex> lock(m_->mu);
    return names_.count(chunk) > 0;
  }
  Status Read(std::vector<ChunkRead>* read_list) override {
    const std::vector<ChunkRead>& reads = *read_list;
    w_->Check();
    std::lock_guard<std::mutex> lock(m_->mu);
    for (const ChunkRead& r : reads) {
      auto name = names_.find(r.chunk_id);
      if (name == names_.end() || !m_->chunks.count(name->second)) {
        lost_.insert(r.chunk_id);
        return Status::NotFound("memory: chunk " + std::to_string(r.chunk_id));
      }
      const auto& parts = m_->chunks.at(name->second)[r.layer];
      void* dst[3] = {r.keys, r.values, r.probe};
      for (int p = 0; p < 3; ++p)
        if (r.parts & (1 << p)) std::memcpy(dst[p], parts[p].data(), parts[p].size());
    }
    return Status::OK();
  }
  void PutCopy(CopyPut, std::function<void(const Status&)> done) override {
    w_->Check();  // reordered copies stay where they were made
    if (done) done(Status::IOError("memory: no copies"));
  }
  void Put(PrefixPut put, std::function<void(const Status&)> done) override {
    w_->Check();
    const size_t c = g_.chunk_tokens, n = put.ids.size() - put.first;
    const size_t bytes[3] = {g_.KeyBytes(), g_.KeyBytes(), g_.ProbeBytes()};
    std::lock_guard<std::mutex> lock(m_->mu);
    for (size_t i = put.first; i < put.ids.size(); ++i) {
      std::vector<int32_t> name(put.tokens.begin(), put.tokens.begin() + (i + 1) * c);
      auto& layers = m_->chunks[name];
      layers.resize(g_.layers);
      for (int l = 0; l < g_.layers; ++l)
        for (int p = 0; p < 3; ++p) {
          const auto* src = static_cast<const uint8_t*>((*put.chunks)[l * n + i - put.first].bytes[p].data_ptr());
          layers[l][p].assign(src, src + bytes[p]);
        }
      names_[put.ids[i]] = name;
    }
    if (done) done(Status::OK());
  }
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                             const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) override {
    w_->Check();
    const size_t c = g_.chunk_tokens;
    int64_t found = 0;
    {
      std::lock_guard<std::mutex> lock(m_->mu);
      while ((matched + found + 1) * c <= tokens.size() &&
             m_->chunks.count(std::vector<int32_t>(tokens.begin(), tokens.begin() + (matched + found + 1) * c)))
        found++;
    }
    if (found == 0) return int64_t{0};
    ASSIGN_OR_RETURN(std::vector<uint64_t> ids, adopt(found));
    std::lock_guard<std::mutex> lock(m_->mu);
    for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i)
      names_[ids[i]] = std::vector<int32_t>(tokens.begin(), tokens.begin() + (matched + i + 1) * c);
    return found;
  }

  std::shared_ptr<MemoryChunks> m_;
  ChunkGeometry g_;
  LockWatch* w_;
  void Known(const PrefixPut&) override { w_->Check(); }
  void KnownCopy(const CopyPut&) override { w_->Check(); }
  std::vector<uint64_t> Lost(const std::vector<uint64_t>& ids) const override {
    w_->Check();
    std::lock_guard<std::mutex> lock(m_->mu);
    std::vector<uint64_t> out;
    for (uint64_t id : ids)
      if (lost_.count(id)) out.push_back(id);
    return out;
  }
  void ForgetLost(const std::vector<uint64_t>& ids) override {
    w_->Check();
    std::lock_guard<std::mutex> lock(m_->mu);
    for (uint64_t id : ids) lost_.erase(id);
  }

 private:
  std::map<uint64_t, std::vector<int32_t>> names_;  // GUARDED_BY(m_->mu)
  std::set<uint64_t> lost_;                          // GUARDED_BY(m_->mu)
};

class BackendTest : public testing::ModelStoreTest {
 protected:
  at::Tensor Run(const char* system, PrefixStore* store, const std::vector<int32_t>& ctx, int64_t storable,
                 RequestTrace* t) {
    std::unique_ptr<RewindableKv> kv;
    auto r = RunRequest(*ParseSystem(system, 0.25), *model_, store, ctx, storable, &kv, t);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : at::Tensor();
  }
};

TEST_P(BackendTest, AnotherStoreReadsThroughTheInterfaceAndNoIoRunsUnderTheIndexMutex) {
  LockWatch watch;
  WatchedEnv env(&watch);
  auto shared = std::make_shared<MemoryChunks>();
  auto open = [&](const std::string& dir) {
    PrefixStoreOptions o = Options(dir);
    o.tiers = TiersOver(CacheLevels({}));  // every read goes to the backends
    o.env = &env;
    auto make = [&](const BackendContext& ctx) -> StatusOr<std::unique_ptr<ChunkBackend>> {
      return std::unique_ptr<ChunkBackend>(new MemoryBackend(shared, ctx.geometry, &watch));
    };
    o.tiers.push_back(BackendTier(Tier::kRemote, make));
    auto s = PrefixStore::Open(*model_, o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    watch.index.push_back(&PrefixStoreTestPeer::index(**s).mu());
    return std::move(*s);
  };
  TempDir a_dir, b_dir;
  auto a = open(a_dir.path());
  const std::vector<int32_t> prefix = Tokens(96, 3);
  std::vector<int32_t> ctx = prefix;
  for (int32_t t : Tokens(7, 40)) ctx.push_back(t);
  RequestTrace first, warm, again;
  Run("as", a.get(), prefix, 96, &first);  // computes and stores 6 chunks, hands them below
  for (const char* system : {"impress-itf-ro", "impress-itf-ro", "impress-itf-ro"}) Run(system, a.get(), ctx, 96, &warm);
  ReorderStats stats;
  ASSERT_TRUE(a->Reorder({}, &stats).ok());
  EXPECT_EQ(stats.nodes_reordered, 1);
  const at::Tensor want = Run("impress-itf", a.get(), ctx, 96, &again);

  auto b = open(b_dir.path());  // an empty store: everything comes from the memory backend
  RequestTrace got_trace;
  const at::Tensor got = Run("impress-itf", b.get(), ctx, 96, &got_trace);
  EXPECT_EQ(got_trace.reused_tokens, 96);
  EXPECT_GT(got_trace.load.read[Tier::kRemote], 0);
  EXPECT_EQ(got_trace.load.read[Tier::kDisk], 0);
  EXPECT_EQ(PrefixStoreTestPeer::disk(*b).chunk_count(), 0u);  // adopted by a record, the data left below
  EXPECT_TRUE(got.allclose(want, 1e-5, 1e-5)) << (got - want).abs().max().item<float>();
  // A chunk gone from below: the request recomputes it, keeps it on its disk
  // (asking the backend what it lost, without the index mutex) and answers
  // as before, bit for bit; the next request reads it locally.
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->chunks.erase(std::vector<int32_t>(prefix.begin(), prefix.begin() + 2 * 16));
  }
  RequestTrace healed_trace, after_trace;
  const at::Tensor healed = Run("impress-itf", b.get(), ctx, 96, &healed_trace);
  EXPECT_TRUE(healed_trace.recomputed_after_error);
  EXPECT_EQ(healed_trace.healed_chunks, 1);
  EXPECT_TRUE(at::equal(healed, got));
  const at::Tensor after = Run("impress-itf", b.get(), ctx, 96, &after_trace);
  EXPECT_FALSE(after_trace.recomputed_after_error) << after_trace.error;
  EXPECT_GT(after_trace.load.read[Tier::kDisk], 0);
  EXPECT_TRUE(at::equal(after, got));
  EXPECT_GT(watch.io.load(), 10);
  EXPECT_EQ(watch.under_lock.load(), 0) << "fsyncs or backend calls with the index mutex held";
}

// Every byte a request reads from below, or from the CPU cache level, goes
// up to the compute device once, over the host-to-device link (bytes_up),
// whatever the policy: the reader pays for what it read, and the chunk's
// entry into the GPU level (under LRU at once, under the score policy on
// observation) pays nothing more.
TEST_P(BackendTest, EveryByteReadCrossesTheDeviceLinkOnce) {
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kScore}) {
    SCOPED_TRACE(static_cast<int>(policy));
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.policy = policy;
    const std::vector<int32_t> prefix = Tokens(96, 3);
    std::vector<int32_t> ctx = prefix;
    for (int32_t t : Tokens(7, 40)) ctx.push_back(t);
    {
      auto store = PrefixStore::Open(*model_, o);
      ASSERT_TRUE(store.ok()) << store.status().message();
      RequestTrace fill;
      Run("as", store->get(), ctx, 96, &fill);  // computes and stores the prefix
    }
    auto store = PrefixStore::Open(*model_, o);  // reopened: the caches start empty
    ASSERT_TRUE(store.ok()) << store.status().message();
    RequestTrace cold, warm;
    Run("as", store->get(), ctx, 96, &cold);
    Run("as", store->get(), ctx, 96, &warm);
    ASSERT_EQ(cold.reused_tokens, 96);
    const CacheCounters k = PrefixStoreTestPeer::cache(**store).counters();
    EXPECT_GT(k.bytes_served[Tier::kDisk], 0);
    EXPECT_EQ(k.bytes_up, k.bytes_served[Tier::kDisk] + k.bytes_served[Tier::kCpu]);
  }
}

// A backend below whose lookups (Discover) wait, while held, until released:
// a cluster node that stalls. It holds nothing.
class StalledLookups final : public ChunkBackend {
 public:
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool held = false;
    int waiting = 0;
  };
  explicit StalledLookups(Gate* g) : g_(g) {}
  Tier tier() const override { return Tier::kRemote; }
  bool Holds(uint64_t, int) const override { return false; }
  Status Read(std::vector<ChunkRead>*) override { return Status::NotFound("stalled: holds nothing"); }
  void Put(PrefixPut, std::function<void(const Status&)> done) override {
    if (done) done(Status::OK());
  }
  void PutCopy(CopyPut, std::function<void(const Status&)> done) override {
    if (done) done(Status::OK());
  }
  StatusOr<int64_t> Discover(const std::vector<int32_t>&, int64_t, uint64_t,
                             const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>&) override {
    std::unique_lock<std::mutex> l(g_->mu);
    g_->waiting++;
    g_->cv.notify_all();
    g_->cv.wait(l, [&] { return !g_->held; });
    g_->waiting--;
    return int64_t{0};
  }
  std::vector<uint64_t> Lost(const std::vector<uint64_t>&) const override { return {}; }
  void ForgetLost(const std::vector<uint64_t>&) override {}

 private:
  Gate* g_;
};

// One request's lookup below stalls (held by the backend); meanwhile a
// request on a prefix stored locally finishes with its usual answer: no lock
// a request takes is held across another's network lookup. Ordered by the
// backend, not by a clock.
TEST_P(BackendTest, LocalRequestsDoNotWaitOnAnotherRequestsLookup) {
  StalledLookups::Gate gate;
  TempDir dir;
  PrefixStoreOptions o = Options(dir.path());
  auto make = [&](const BackendContext&) -> StatusOr<std::unique_ptr<ChunkBackend>> {
    return std::unique_ptr<ChunkBackend>(new StalledLookups(&gate));
  };
  o.tiers.push_back(BackendTier(Tier::kRemote, make));
  auto store = PrefixStore::Open(*model_, o);
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::vector<int32_t> prefix = Tokens(64, 3);
  std::vector<int32_t> ctx = prefix;
  for (int32_t t : Tokens(7, 40)) ctx.push_back(t);
  RequestTrace first, clean;
  Run("as", store->get(), prefix, 64, &first);
  const at::Tensor want = Run("impress-itf", store->get(), ctx, 64, &clean);
  {
    std::lock_guard<std::mutex> l(gate.mu);
    gate.held = true;
  }
  std::thread other([&] {
    RequestTrace t;
    std::vector<int32_t> elsewhere = Tokens(64, 21);
    elsewhere.push_back(5);
    Run("as", store->get(), elsewhere, 64, &t);
  });
  bool stalled;
  {
    std::unique_lock<std::mutex> l(gate.mu);
    stalled = gate.cv.wait_for(l, std::chrono::seconds(120), [&] { return gate.waiting > 0; });
  }
  std::future<at::Tensor> local = std::async(std::launch::async, [&] {
    RequestTrace t;
    const at::Tensor r = Run("impress-itf", store->get(), ctx, 64, &t);
    return t.reused_tokens == 64 ? r : at::Tensor();
  });
  const bool finished = local.wait_for(std::chrono::seconds(120)) == std::future_status::ready;
  {
    std::lock_guard<std::mutex> l(gate.mu);
    gate.held = false;
    gate.cv.notify_all();
  }
  other.join();
  ASSERT_TRUE(stalled) << "the other request never reached its lookup";
  ASSERT_TRUE(finished) << "a local request waited on another request's lookup";
  const at::Tensor got = local.get();
  ASSERT_TRUE(got.defined());
  EXPECT_TRUE(at::equal(got, want));
}

// A backend that names the wrong tier: the local disk's.
class MisnamedBackend final : public ChunkBackend {
 public:
  Tier tier() const override { return Tier::kDisk; }
  bool Holds(uint64_t, int) const override { return false; }
  Status Read(std::vector<ChunkRead>*) override { return Status::NotFound("nothing here"); }
};

// The tier list is one list, fastest first: cache levels above the disk,
// the disk once, backends below it; a backend must be what its entry names.
TEST_P(BackendTest, TheTierListIsCheckedInOrder) {
  const std::vector<CacheLevel> levels = CacheLevels({});
  BackendFactory misnamed = [](const BackendContext&) -> StatusOr<std::unique_ptr<ChunkBackend>> {
    return std::unique_ptr<ChunkBackend>(new MisnamedBackend);
  };
  const std::vector<std::pair<std::vector<StoreTier>, std::string>> refused = {
      {{CacheTier(levels[0])}, "the tier list has no disk"},
      {{DiskTier(), CacheTier(levels[1])}, "cache level 'cpu' is not above the disk"},
      {{CacheTier(levels[0]), DiskTier(), DiskTier()}, "the tier list names the disk twice"},
      {{BackendTier(Tier::kRemote, misnamed), DiskTier()}, "backend 'remote' is not below the disk"},
      {{DiskTier(), BackendTier(Tier::kCpu, misnamed)}, "backend 'cpu' is not below the disk"},
      {{DiskTier(), StoreTier{Tier::kRemote, std::nullopt, nullptr}},
       "tier 'remote' is neither a cache level nor a backend"},
      {{DiskTier(), BackendTier(Tier::kRemote, misnamed)}, "backend 'remote' reports tier 'disk'"},
  };
  for (const auto& [tiers, why] : refused) {
    SCOPED_TRACE(why);
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.tiers = tiers;
    auto store = PrefixStore::Open(*model_, o);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().message(), why);
  }
  TempDir dir;
  PrefixStoreOptions o = Options(dir.path());
  o.tiers = {DiskTier()};  // no cache level: every read goes to the disk
  auto store = PrefixStore::Open(*model_, o);
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::vector<int32_t> ctx = Tokens(64, 3);
  for (int32_t t : Tokens(7, 40)) ctx.push_back(t);
  RequestTrace first, second, third;
  Run("as", store->get(), ctx, 64, &first);  // computes and stores the prefix's 4 chunks
  const at::Tensor want = Run("as", store->get(), ctx, 64, &second);
  const at::Tensor got = Run("as", store->get(), ctx, 64, &third);
  EXPECT_EQ(second.reused_tokens, 64);
  EXPECT_EQ(third.reused_tokens, 64);
  ASSERT_TRUE(want.defined());
  EXPECT_TRUE(at::equal(got, want));
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, BackendTest, ::testing::Values("tiny-llama-gqa", "tiny-opt-preln"),
                         testing::ParamName);

}  // namespace
}  // namespace impress
