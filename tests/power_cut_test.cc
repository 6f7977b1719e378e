// Power loss, not only SIGKILL: a SIGKILL keeps what the page cache holds, a
// power cut loses every write not yet synced. A store is populated,
// reordered, reopened and compacted through PowerCutEnv, the power is cut at
// 100 seeded points of that work, and the store is reopened from what a
// reboot finds: it opens, every prefix whose insert returned is there, every
// stored chunk verifies, nothing torn is served (no request recomputes after
// an error) and every answer equals a store that never lost power. Repair is
// cut at every one of its file operations in turn and, run again, keeps the
// same chunks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "kvstore/compaction.h"
#include "kvstore/prefix_store.h"
#include "request/request.h"
#include "kvstore/store_repair.h"
#include "model_store_fixture.h"
#include "power_cut_env.h"
#include "store/manifest.h"
#include "store_peer.h"

namespace impress {
namespace {

using testing::PowerCutEnv;
using testing::TempDir;

std::string Contents(const std::string& path) {
  auto s = ReadFileToString(Env::Default(), path);
  return s.ok() ? *s : "<" + s.status().message() + ">";
}

// The test Env itself: what was synced survives a reboot, what was not is
// undone (writes, a truncate, a rename and a creation), and after the cut
// nothing changes.
TEST(PowerCutEnv, ARebootKeepsWhatWasSyncedOnly) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.File("old"), "old contents").ok());
  PowerCutEnv env(Env::Default());
  std::mt19937_64 rng(1);
  {
    auto a = env.Open(dir.File("a"), OpenMode::kReadWrite);  // created; its directory synced below
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE((*a)->Write(0, "synced", 6).ok());
    ASSERT_TRUE((*a)->Sync().ok());
    ASSERT_TRUE(env.SyncDir(dir.path()).ok());
    ASSERT_TRUE((*a)->Write(6, " and not", 8).ok());
    ASSERT_TRUE((*a)->Truncate(3).ok());
    auto b = env.Open(dir.File("b"), OpenMode::kCreate);  // created, never made durable
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*b)->Write(0, "b", 1).ok() && (*b)->Sync().ok());
    auto t = env.Open(dir.File("old.tmp"), OpenMode::kCreate);
    ASSERT_TRUE((*t)->Write(0, "new", 3).ok() && (*t)->Sync().ok());
    ASSERT_TRUE(env.Rename(dir.File("old.tmp"), dir.File("old")).ok());  // no SyncDir after it
    EXPECT_EQ(Contents(dir.File("old")), "new");
    env.CutPowerAt(env.mutating_calls() + 1);
    EXPECT_TRUE((*a)->Write(0, "late", 4).IsIOError());
    EXPECT_TRUE(env.power_cut());
  }
  ASSERT_TRUE(env.Reboot(&rng, false).ok());
  EXPECT_EQ(Contents(dir.File("a")), "synced");
  EXPECT_FALSE(std::filesystem::exists(dir.File("b")));
  EXPECT_EQ(Contents(dir.File("old")), "old contents");
  EXPECT_FALSE(std::filesystem::exists(dir.File("old.tmp")));
}

class PowerCutTest : public testing::ModelStoreTest {
 protected:
  void SetUp() override {
    testing::ModelStoreTest::SetUp();
    if (!model_) return;
    prefixes_ = {Tokens(96, 1), Tokens(80, 2), Tokens(32, 1)};
    prefixes_[2].resize(32);
    for (int32_t t : Tokens(48, 9)) prefixes_[2].push_back(t);  // shares P0's first two chunks: splits it
  }
  std::vector<int32_t> Query(int p, int q) {
    std::vector<int32_t> ctx = prefixes_[p];
    for (int32_t t : Tokens(6 + q % 5, 300 + q)) ctx.push_back(t);
    return ctx;
  }
  StatusOr<at::Tensor> Run(const char* system, PrefixStore* store, const std::vector<int32_t>& ctx, int64_t storable,
                           RequestTrace* t) {
    std::unique_ptr<RewindableKv> kv;
    return RunRequest(*ParseSystem(system, 0.25), *model_, store, ctx, storable, &kv, t);
  }
  // Populates, reorders (twice: the second pass replaces and frees the
  // first copy and rewrites the log), splits the reordered node, reopens
  // (which frees the dropped copy) and compacts, all through `env`; stops
  // once `cut` says the power is gone. `committed`: the prefixes whose insert returned.
  void Work(Env* env, const std::string& dir, PowerCutEnv* cut, std::set<int>* committed) {
    auto dead = [&] { return cut != nullptr && cut->power_cut(); };
    PrefixStoreOptions o = Options(dir);
    o.env = env;
    ReorderOptions every;
    every.min_moved = 0, every.log_growth = 1.0, every.log_min_bytes = 0;
    {
      auto s = PrefixStore::Open(*model_, o);
      if (!s.ok()) return;
      auto insert = [&](int p) {
        RequestTrace t;
        auto r = Run("as", s->get(), prefixes_[p], static_cast<int64_t>(prefixes_[p].size()), &t);
        if (r.ok() && t.stored_chunks > 0) committed->insert(p);
      };
      auto warm = [&](int q) {
        RequestTrace t;
        (void)Run("impress-itf-ro", s->get(), Query(0, q), 96, &t);
      };
      ReorderStats st;
      for (auto step : std::vector<std::function<void()>>{
               [&] { insert(0); }, [&] { warm(0); }, [&] { warm(1); }, [&] { insert(1); },
               [&] { (void)(*s)->Reorder(every, &st); }, [&] { warm(2); }, [&] { warm(3); },
               [&] { (void)(*s)->Reorder(every, &st); }, [&] { insert(2); }}) {
        if (dead()) return;
        step();
      }
    }
    if (dead()) return;
    { auto s = PrefixStore::Open(*model_, o); }
    if (dead()) return;
    auto id = ReadManifest(env, dir);
    if (!id.ok()) return;
    StoreOptions so{id->geometry, id->fingerprint, false, 2, env};
    std::vector<std::string> records;
    auto disk = ChunkStore::Open(dir, so, &records);
    if (disk.ok()) (void)CompactStore(disk->get(), records);
  }
  std::vector<std::vector<int32_t>> prefixes_;
};

TEST_P(PowerCutTest, EveryReturnedCommitSurvivesAndNothingTornIsServed) {
  TempDir ref_dir;
  PowerCutEnv counting(Env::Default());
  std::set<int> all;
  Work(&counting, ref_dir.path(), nullptr, &all);
  ASSERT_EQ(all, (std::set<int>{0, 1, 2}));
  const int64_t calls = counting.mutating_calls();
  auto ref = PrefixStore::Open(*model_, Options(ref_dir.path()));
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  std::mt19937_64 rng(2025);
  int64_t lost_prefixes = 0, kept_all = 0;
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    TempDir dir;
    PowerCutEnv env(Env::Default());
    const int64_t at = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(calls));
    env.CutPowerAt(at);
    std::set<int> committed;
    Work(&env, dir.path(), &env, &committed);
    ASSERT_TRUE(env.Reboot(&rng, trial % 2 == 1).ok());
    if (!std::filesystem::exists(dir.File("MANIFEST"))) {  // the cut came before the store existed
      EXPECT_TRUE(committed.empty());
      continue;
    }
    auto s = PrefixStore::Open(*model_, Options(dir.path()));
    ASSERT_TRUE(s.ok()) << "cut at call " << at << " of " << calls << ": " << s.status().message();
    uint64_t checked = 0;
    Status v = PrefixStoreTestPeer::disk(**s).Verify(&checked);
    ASSERT_TRUE(v.ok()) << v.message();
    for (int p : committed)
      EXPECT_EQ(PrefixStoreTestPeer::index(**s).tree().MatchPrefix(prefixes_[p]).chunks.size(), prefixes_[p].size() / 16) << "prefix " << p;
    lost_prefixes += 3 - static_cast<int64_t>(committed.size());
    kept_all += committed.size() == 3;
    for (int p = 0; p < 3; ++p) {
      for (const char* system : {"as", "impress-itf-ro"}) {
        const std::vector<int32_t> ctx = Query(p, 50);
        const int64_t storable = static_cast<int64_t>(prefixes_[p].size());
        RequestTrace got_t, want_t;
        auto got = Run(system, s->get(), ctx, storable, &got_t);
        auto want = Run(system, ref->get(), ctx, storable, &want_t);
        ASSERT_TRUE(got.ok() && want.ok()) << got.status().message();
        EXPECT_FALSE(got_t.recomputed_after_error) << got_t.error;
        // A prefix that was there is served exactly as a store that never lost power serves it.
        if (committed.count(p) && got_t.reused_tokens == want_t.reused_tokens)
          EXPECT_TRUE(got->equal(*want)) << system << " prefix " << p << ", cut at call " << at;
        EXPECT_EQ(got->argmax().item<int64_t>(), want->argmax().item<int64_t>()) << system << " prefix " << p;
      }
    }
  }
  std::printf("power cuts: 100 trials over %lld file calls; %lld prefixes not yet committed at the cut, %lld trials with all three\n",
              static_cast<long long>(calls), static_cast<long long>(lost_prefixes), static_cast<long long>(kept_all));
}

// Repair cut at each of its file operations in turn (none of its unsynced
// changes kept, then a random first part of them) and run again: the same
// chunks kept, and the store verifies.
TEST_P(PowerCutTest, RepairCutAnywhereKeepsTheSameChunks) {
  TempDir clean;
  {
    auto s = PrefixStore::Open(*model_, Options(clean.path()));
    ASSERT_TRUE(s.ok());
    for (int p = 0; p < 3; ++p) {
      RequestTrace t;
      ASSERT_TRUE(Run("as", s->get(), prefixes_[p], static_cast<int64_t>(prefixes_[p].size()), &t).ok());
    }
  }
  {  // a flipped byte in chunks.dat's second record: a chunk of P0
    std::fstream f(clean.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 3 + 17);
    f.put('\x55');
  }
  auto copy = [&](const TempDir& to) {
    std::filesystem::copy(clean.path(), to.path(), std::filesystem::copy_options::recursive |
                                                       std::filesystem::copy_options::overwrite_existing);
  };
  TempDir ref_dir;
  copy(ref_dir);
  PowerCutEnv counting(Env::Default());
  auto want = RepairStore({ref_dir.path(), std::nullopt, &counting});
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_TRUE(want->changed);
  ASSERT_GT(want->chunks_behind_damage + want->chunk_layers_damaged, 0);
  const int64_t calls = counting.mutating_calls();
  ASSERT_GT(calls, 3);
  std::mt19937_64 rng(7);
  for (int keep_some = 0; keep_some < 2; ++keep_some) {
    for (int64_t at = 1; at <= calls; ++at) {
      SCOPED_TRACE("cut at call " + std::to_string(at) + (keep_some ? ", some unsynced changes kept" : ""));
      TempDir dir;
      copy(dir);
      PowerCutEnv env(Env::Default());
      env.CutPowerAt(at);
      (void)RepairStore({dir.path(), std::nullopt, &env});  // fails, unless the cut only left space unpunched
      ASSERT_TRUE(env.Reboot(&rng, keep_some == 1).ok());
      auto again = RepairStore({dir.path(), std::nullopt, nullptr});
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_EQ(again->kept_ids, want->kept_ids);
      std::vector<std::string> records;
      auto disk = ChunkStore::OpenExisting(dir.path(), &records);
      ASSERT_TRUE(disk.ok()) << disk.status().message();
      uint64_t checked = 0;
      EXPECT_TRUE((*disk)->Verify(&checked).ok());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PowerCutTest, ::testing::Values("tiny-llama-gqa"), testing::ParamName);

}  // namespace
}  // namespace impress
