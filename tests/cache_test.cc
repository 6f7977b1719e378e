// Radix tree, eviction policies and the tiered cache's invariants.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <random>

#include "cache/radix_tree.h"
#include "cache/tiered_cache.h"
#include "policy/policy.h"

namespace impress {
namespace {

std::vector<int32_t> Seq(std::initializer_list<int32_t> v) { return v; }

TEST(RadixTree, MatchInsertSplitAtChunkBoundaries) {
  RadixTree t(2);
  EXPECT_EQ(t.Insert(Seq({1, 2, 3, 4, 5, 6, 7})), (std::vector<uint64_t>{0, 1, 2}));  // tail token 7 not stored
  EXPECT_EQ(t.MatchPrefix(Seq({1, 2, 3, 4, 9, 9})).chunks, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(t.MatchPrefix(Seq({1, 2, 3})).chunks, (std::vector<uint64_t>{0}));
  EXPECT_TRUE(t.MatchPrefix(Seq({1, 3, 3, 4})).chunks.empty());  // chunk granularity: no partial chunk
  EXPECT_EQ(t.NewChunks(Seq({1, 2, 3, 4, 8, 8, 9, 9})), 2);
  // Diverging after two chunks splits the first node; shared chunks keep their ids.
  EXPECT_EQ(t.Insert(Seq({1, 2, 3, 4, 8, 8, 9, 9})), (std::vector<uint64_t>{0, 1, 3, 4}));
  EXPECT_EQ(t.node_count(), 4u);  // root, [1 2 3 4], [5 6], [8 8 9 9]
  EXPECT_EQ(t.MatchPrefix(Seq({1, 2, 3, 4, 5, 6})).chunks, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(t.MatchPrefix(Seq({1, 2, 3, 4, 8, 8, 9, 9, 1, 1})).chunks, (std::vector<uint64_t>{0, 1, 3, 4}));
  EXPECT_EQ(t.Insert(Seq({1, 2, 3, 4, 5, 6})), (std::vector<uint64_t>{0, 1, 2}));  // nothing new
  EXPECT_EQ(t.next_chunk_id(), 5u);
  EXPECT_EQ(t.chunk_count(), 5u);

  auto m = t.MatchPrefix(Seq({1, 2, 3, 4, 5, 6}));
  t.Lock(m);
  EXPECT_TRUE(t.IsLocked(2));
  EXPECT_TRUE(t.IsLocked(0));
  EXPECT_FALSE(t.IsLocked(4));
  t.Unlock(m);
  EXPECT_FALSE(t.IsLocked(2));
}

TEST(RadixTree, ReplayGivesSameIds) {
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> inserts;
  for (int i = 0; i < 50; ++i) {
    std::vector<int32_t> s(4 * (1 + rng() % 6));
    for (auto& x : s) x = static_cast<int32_t>(rng() % 3);
    inserts.push_back(s);
  }
  RadixTree a(4), b(4);
  for (const auto& s : inserts) a.Insert(s);
  for (const auto& s : inserts) b.Insert(s);
  for (const auto& s : inserts) EXPECT_EQ(a.MatchPrefix(s).chunks, b.MatchPrefix(s).chunks);
  for (const auto& s : inserts) EXPECT_EQ(a.MatchPrefix(s).tokens(), static_cast<int64_t>(s.size()));
}

TEST(Policy, LruAndLfuOrder) {
  auto lru = MakePolicy("lru");
  auto lfu = MakePolicy("lfu");
  ASSERT_TRUE(lru.ok() && lfu.ok());
  for (uint64_t k : {1, 2, 3}) (*lru)->Insert(k), (*lfu)->Insert(k);
  (*lru)->Touch(1);
  (*lfu)->Touch(1), (*lfu)->Touch(1), (*lfu)->Touch(3);
  auto any = [](uint64_t) { return true; };
  EXPECT_EQ(*(*lru)->Victim(any), 2u);
  EXPECT_EQ(*(*lfu)->Victim(any), 2u);
  EXPECT_EQ(*(*lfu)->Victim([](uint64_t k) { return k != 2; }), 3u);
  (*lru)->Erase(2);
  EXPECT_EQ(*(*lru)->Victim(any), 3u);
  EXPECT_FALSE(MakePolicy("fifo").ok());
}

ChunkKv Chunk(int64_t tokens, float value) {
  return {at::full({tokens, 2, 4}, value, at::kHalf), at::full({tokens, 2, 4}, value, at::kHalf)};
}

// A long seeded stream of accesses: capacities never exceeded, GPU and CPU
// never hold the same chunk, every hit returns the chunk's own data (pinned
// chunks are covered by PinnedChunksStay).
TEST(TieredCache, InvariantsUnderRandomStream) {
  for (const char* policy : {"lru", "lfu"}) {
    TierOptions opt;
    opt.gpu_bytes = 10 * 1024;
    opt.cpu_bytes = 25 * 1024;
    opt.policy = policy;
    auto cache = TieredCache::Create(opt);
    ASSERT_TRUE(cache.ok());
    TieredCache& c = **cache;
    std::set<uint64_t> pinned;
    c.SetPinned([&](uint64_t k) { return pinned.count(k) > 0; });
    std::mt19937 rng(1234);
    std::normal_distribution<double> dist(100, 30);
    for (int i = 0; i < 20000; ++i) {
      uint64_t key = static_cast<uint64_t>(std::clamp(dist(rng), 0.0, 199.0));
      int64_t tokens = 8 + static_cast<int64_t>(key % 5) * 8;  // 512..2560 bytes
      if (rng() % 50 == 0) {
        pinned.clear();
        for (int p = 0; p < 3; ++p) pinned.insert(rng() % 200);
      }
      Tier tier;
      auto hit = c.Get(key, &tier);
      if (hit) {
        ASSERT_EQ(hit->k.size(0), tokens);
        ASSERT_EQ(hit->k[0][0][0].item<float>(), static_cast<float>(key % 100));
      } else {
        c.Put(key, Chunk(tokens, static_cast<float>(key % 100)));
      }
      ASSERT_LE(c.used(Tier::kGpu), opt.gpu_bytes);
      ASSERT_LE(c.used(Tier::kCpu), opt.cpu_bytes);
      if (i % 97 == 0)
        for (uint64_t k = 0; k < 200; ++k) ASSERT_FALSE(c.Contains(k, Tier::kGpu) && c.Contains(k, Tier::kCpu));
    }
    auto counters = c.counters();
    EXPECT_GT(counters.hits[0], 0);
    EXPECT_GT(counters.hits[1], 0);
    EXPECT_GT(counters.misses, 0);
  }
}

TEST(TieredCache, PinnedChunksStay) {
  TierOptions opt;
  opt.gpu_bytes = 2 * 256;  // two 8-token chunks
  opt.cpu_bytes = 0;
  auto cache = TieredCache::Create(opt);
  TieredCache& c = **cache;
  c.SetPinned([](uint64_t k) { return k == 1; });
  c.Put(1, Chunk(8, 1));
  c.Put(2, Chunk(8, 2));
  c.Put(3, Chunk(8, 3));  // evicts 2 (1 is pinned)
  EXPECT_TRUE(c.Contains(1, Tier::kGpu));
  EXPECT_FALSE(c.Contains(2, Tier::kGpu));
  EXPECT_TRUE(c.Contains(3, Tier::kGpu));
}

}  // namespace
}  // namespace impress
