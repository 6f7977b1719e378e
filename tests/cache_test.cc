// Radix tree, eviction policies and the tiered cache's invariants.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "cache/chunk_key.h"
#include "cache/radix_tree.h"
#include "kvstore/store_log.h"
#include "store/chunk_store.h"
#include "test_util.h"
#include "cache/tiered_cache.h"
#include "policy/score.h"
#include "policy/policy.h"

namespace impress {
namespace {

std::vector<int32_t> Seq(std::initializer_list<int32_t> v) { return v; }

// The GPU level over the CPU level, of these many bytes: the two the tests
// use, whatever other cache tiers cache/tier.h lists.
std::vector<CacheLevel> Levels(int64_t gpu, int64_t cpu) {
  std::vector<CacheLevel> two;
  for (const CacheLevel& l : CacheLevels(TierCountsOf({{Tier::kGpu, gpu}, {Tier::kCpu, cpu}})))
    if (l.tier == Tier::kGpu || l.tier == Tier::kCpu) two.push_back(l);
  return two;
}

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
}

// A tree rebuilt from the log its inserts wrote (the records the prefix
// store commits, read back from a reopened chunk store) names every prefix
// with the same chunk ids as the tree that made them, splits included.
TEST(RadixTree, ReplayGivesSameIds) {
  std::mt19937 rng(5);
  testing::TempDir dir;
  StoreOptions so;
  so.geometry = ChunkGeometry{4, 1, 1, 8, 1, 2};
  so.fingerprint = "replay-test";
  RadixTree a(4);
  std::vector<std::vector<int32_t>> inserts;
  {
    auto store = ChunkStore::Open(dir.path(), so, nullptr);
    ASSERT_TRUE(store.ok()) << store.status().message();
    for (int i = 0; i < 50; ++i) {
      std::vector<int32_t> s(4 * (1 + rng() % 6));
      for (auto& x : s) x = static_cast<int32_t>(rng() % 3);
      inserts.push_back(s);
      const size_t matched = a.MatchPrefix(s).chunks.size();
      if (s.size() / 4 <= matched) continue;
      const uint64_t first = a.ReserveChunkIds(s.size() / 4 - matched);
      a.Insert(s, first);
      ASSERT_TRUE((*store)->Commit({}, InsertRecord(s, first)).ok());
    }
  }
  std::vector<std::string> committed;
  auto store = ChunkStore::Open(dir.path(), so, &committed);
  ASSERT_TRUE(store.ok()) << store.status().message();
  RadixTree b(4);
  for (const std::string& meta : committed) ASSERT_TRUE(ReplayRecord(meta, 1, &b).ok()) << meta;
  for (const auto& s : inserts) {
    EXPECT_EQ(a.MatchPrefix(s).chunks, b.MatchPrefix(s).chunks);
    EXPECT_EQ(b.MatchPrefix(s).tokens(), static_cast<int64_t>(s.size()));
  }
  EXPECT_EQ(a.Nodes().size(), b.Nodes().size());
}

// The caches' key: a (chunk, layer) packs into one word and back, and two
// pairs never share a word (layers up to 4095, chunk ids up to 2^52 - 1).
TEST(ChunkKey, PacksAndUnpacksEveryLayer) {
  std::set<uint64_t> seen;
  for (uint64_t chunk : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, (uint64_t{1} << 52) - 1})
    for (int layer : {0, 1, 31, 4095}) {
      const uint64_t key = ChunkKey{chunk, layer}.packed();
      EXPECT_TRUE(seen.insert(key).second) << chunk << " " << layer;
      const ChunkKey back = ChunkKey::Unpack(key);
      EXPECT_EQ(back.chunk, chunk);
      EXPECT_EQ(back.layer, layer);
    }
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
  for (const char* policy : {"lru", "lfu", "score"}) {
    TierOptions opt;
    opt.levels = Levels(10 * 1024, 25 * 1024);
    opt.policy = *ParsePolicy(policy);
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
      c.Observe({{key, (key % 7) / 6.0}});
      ASSERT_LE(c.used(Tier::kGpu), opt.levels[0].capacity);
      ASSERT_LE(c.used(Tier::kCpu), opt.levels[1].capacity);
      if (i % 97 == 0) {
        // Capacity from what is resident, each chunk's bytes from its size
        // (keys and values of `tokens` x 2 x 4 halves), not from the cache's counter.
        int64_t resident[2] = {0, 0};
        for (uint64_t k = 0; k < 200; ++k) {
          ASSERT_FALSE(c.Contains(k, Tier::kGpu) && c.Contains(k, Tier::kCpu));
          const int64_t bytes = 2 * (8 + static_cast<int64_t>(k % 5) * 8) * 2 * 4 * 2;
          if (c.Contains(k, Tier::kGpu)) resident[0] += bytes;
          if (c.Contains(k, Tier::kCpu)) resident[1] += bytes;
        }
        ASSERT_LE(resident[0], opt.levels[0].capacity) << policy << " step " << i;
        ASSERT_LE(resident[1], opt.levels[1].capacity) << policy << " step " << i;
        ASSERT_EQ(resident[0], c.used(Tier::kGpu)) << policy << " step " << i;
        ASSERT_EQ(resident[1], c.used(Tier::kCpu)) << policy << " step " << i;
      }
    }
    auto counters = c.counters();
    EXPECT_GT(counters.hits[Tier::kGpu], 0);
    EXPECT_GT(counters.hits[Tier::kCpu], 0);
    EXPECT_GT(counters.misses, 0);
  }
}

TEST(ChunkScores, FrequencyTimesMovingAverageShare) {
  ChunkScores s(/*keep=*/0.5);
  EXPECT_EQ(s.Score(7), 0);
  s.Access(7);
  EXPECT_EQ(s.Score(7), 1);  // share unknown yet: counted whole
  s.Important(7, 1.0);
  s.Access(7);
  s.Important(7, 0.0);
  EXPECT_DOUBLE_EQ(s.Score(7), 2 * 0.5);
  s.Access(7);
  s.Important(7, 0.5);
  EXPECT_DOUBLE_EQ(s.Score(7), 3 * 0.5);
}

TEST(ChunkScores, TransferGivesTheBestHistoryFirst) {
  ChunkScores s(0.5);
  for (int i = 0; i < 3; ++i) s.Access(1);
  s.Important(1, 0.2);  // 0.6
  s.Access(2);
  s.Important(2, 1.0);  // 1.0
  s.Transfer({1, 2, 3}, {10, 11, 12});
  EXPECT_DOUBLE_EQ(s.Score(10), 1.0);
  EXPECT_DOUBLE_EQ(s.Score(11), 3 * 0.2);
  EXPECT_EQ(s.Score(12), 0);  // 3 had no history
}

// The three access cases of docs/paper.md §3, with two-chunk tiers.
TEST(TieredCache, ScorePolicyPlacesByScore) {
  TierOptions opt;
  opt.levels = Levels(2 * 256, 2 * 256);  // two 8-token chunks each
  opt.policy = PolicyKind::kScore;
  auto cache = TieredCache::Create(opt);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  TieredCache& c = **cache;
  auto access = [&](uint64_t key, double share) {  // one request's access to `key`: where it was found
    Tier t;
    auto hit = c.Get(key, &t);
    if (!hit) c.Put(key, Chunk(8, static_cast<float>(key)));
    c.Observe({{key, share}});
    return hit ? std::optional<Tier>(t) : std::nullopt;
  };
  // Empty tiers take anything: 1 and 2 fill the GPU, 3 and 4 then go to the CPU.
  for (uint64_t k : {1, 2}) EXPECT_EQ(access(k, 0.5), std::nullopt);
  EXPECT_TRUE(c.Contains(1, Tier::kGpu) && c.Contains(2, Tier::kGpu));
  access(3, 0.1);  // score 0.1 < GPU lowest 0.5: lands in the CPU tier
  EXPECT_TRUE(c.Contains(3, Tier::kCpu));
  access(4, 1.0);  // score 1.0 > 0.5: replaces the GPU's lowest (1); 1 goes down
  EXPECT_TRUE(c.Contains(4, Tier::kGpu));
  EXPECT_TRUE(c.Contains(1, Tier::kCpu));
  EXPECT_FALSE(c.Contains(1, Tier::kGpu));
  // A disk read that beats neither tier's lowest is not cached.
  access(5, 0.05);
  EXPECT_EQ(c.Where(5), std::nullopt);
  // A CPU hit whose score stays below the GPU's lowest stays in the CPU tier ...
  EXPECT_EQ(access(3, 0.1), Tier::kCpu);  // score 2 x 0.1
  EXPECT_TRUE(c.Contains(3, Tier::kCpu));
  // ... and one that beats it replaces it; the loser goes to the CPU tier.
  EXPECT_EQ(access(1, 1.0), Tier::kCpu);  // score 2 x 0.75 = 1.5 > 2's 0.5
  EXPECT_TRUE(c.Contains(1, Tier::kGpu));
  EXPECT_TRUE(c.Contains(2, Tier::kCpu));
  // A GPU hit stays and its score grows.
  EXPECT_EQ(access(4, 1.0), Tier::kGpu);
  EXPECT_TRUE(c.Contains(4, Tier::kGpu));
  EXPECT_GT(c.score_bytes(), 0);
}

// Each byte that reaches the device crosses the host-to-device link once,
// under every policy: a chunk read from below when the reader reports it
// (RecordRead), never again when its entry goes into the GPU level (it was
// sent up); a CPU level's chunk when it is served up; a demotion or a GPU hit
// not at all.
TEST(TieredCache, EachByteCrossesTheLinkOnce) {
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kLfu, PolicyKind::kScore}) {
    SCOPED_TRACE(static_cast<int>(policy));
    TierOptions opt;
    opt.levels = Levels(2 * 256, 2 * 256);  // two 8-token chunks each
    opt.policy = policy;
    auto cache = TieredCache::Create(opt);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    TieredCache& c = **cache;
    const int64_t b = Chunk(8, 0).bytes();
    auto read = [&](uint64_t key, double share) {  // a miss, read from disk and sent up, then observed
      ChunkKv kv = Chunk(8, static_cast<float>(key));
      kv.sent_up = true;
      c.RecordRead(Tier::kDisk, kv.bytes());
      c.Put(key, kv);
      c.Observe({{key, share}});
    };
    read(1, 0.5);
    read(2, 0.5);
    EXPECT_EQ(c.counters().bytes_up, 2 * b);  // both went into the GPU level: no second crossing
    read(3, 0.1);  // LRU and LFU: into the GPU level, 1 down to the CPU level; score: into the CPU level
    EXPECT_EQ(c.counters().bytes_up, 3 * b);
    const uint64_t low = policy == PolicyKind::kScore ? 3 : 1;
    ASSERT_TRUE(c.Contains(low, Tier::kCpu));
    Tier t;
    ASSERT_TRUE(c.Get(low, &t).has_value());
    EXPECT_EQ(t, Tier::kCpu);
    c.Observe({{low, 1.0}});
    EXPECT_EQ(c.counters().bytes_up, 4 * b);  // served up once; its promotion moves that copy
    ASSERT_TRUE(c.Contains(low, Tier::kGpu));
    ASSERT_TRUE(c.Get(low, &t).has_value());
    c.Observe({{low, 1.0}});
    EXPECT_EQ(t, Tier::kGpu);
    EXPECT_EQ(c.counters().bytes_up, 4 * b);  // a GPU hit crosses nothing
  }
}

TEST(TieredCache, PinnedChunksStay) {
  TierOptions opt;
  opt.levels = Levels(2 * 256, 0);  // two 8-token chunks
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

// The cache is its list of levels: a CPU level alone caches, serves and
// evicts as the lower level of two does, and names its tier in counters.
TEST(TieredCache, ALevelListOfOne) {
  TierOptions opt;
  opt.levels = {Levels(0, 2 * 256)[1]};  // the CPU level only: two 8-token chunks
  auto cache = TieredCache::Create(opt);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  TieredCache& c = **cache;
  for (uint64_t k : {1, 2, 3}) c.Put(k, Chunk(8, static_cast<float>(k)));  // 3 evicts 1 (LRU), nothing below
  EXPECT_EQ(c.Where(1), std::nullopt);
  EXPECT_EQ(c.Where(3), Tier::kCpu);
  Tier t;
  auto hit = c.Get(3, &t);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(t, Tier::kCpu);
  EXPECT_EQ(hit->k[0][0][0].item<float>(), 3.0f);
  EXPECT_EQ(c.counters().hits[Tier::kCpu], 1);
  EXPECT_EQ(c.capacity(Tier::kGpu), 0);
  EXPECT_EQ(c.entries(Tier::kCpu), 2u);
}

// Levels are whatever tiers the list names, fastest first: with a third
// level, victims cascade through all three and only the last level's drop.
// Levels out of order, or two of one tier, are refused.
TEST(TieredCache, ALevelListOfThree) {
  TierOptions opt;
  opt.levels = Levels(256, 256);  // one 8-token chunk each
  CacheLevel third = opt.levels[1];
  third.tier = Tier::kDisk;
  opt.levels.push_back(third);
  auto cache = TieredCache::Create(opt);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  TieredCache& c = **cache;
  for (uint64_t k : {1, 2, 3}) c.Put(k, Chunk(8, static_cast<float>(k)));  // LRU: 1 down to the third, 2 to the CPU
  EXPECT_EQ(c.Where(3), Tier::kGpu);
  EXPECT_EQ(c.Where(2), Tier::kCpu);
  EXPECT_EQ(c.Where(1), Tier::kDisk);
  c.Put(4, Chunk(8, 4));  // 1 leaves the last level
  EXPECT_EQ(c.Where(1), std::nullopt);
  Tier t;
  auto hit = c.Get(2, &t);  // a hit two levels down moves up; the others cascade one level
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(t, Tier::kDisk);
  EXPECT_EQ(hit->k[0][0][0].item<float>(), 2.0f);
  EXPECT_EQ(c.Where(2), Tier::kGpu);
  EXPECT_EQ(c.Where(4), Tier::kCpu);
  EXPECT_EQ(c.Where(3), Tier::kDisk);
  EXPECT_EQ(c.counters().hits[Tier::kDisk], 1);

  TierOptions reversed;
  reversed.levels = {Levels(256, 256)[1], Levels(256, 256)[0]};
  auto bad = TieredCache::Create(reversed);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "cache levels must be distinct tiers, fastest first (gpu after cpu)");
  TierOptions twice;
  twice.levels = {Levels(256, 256)[1], Levels(256, 256)[1]};
  EXPECT_FALSE(TieredCache::Create(twice).ok());
}

// A chunk with an encoded form: its "encoding" here is one byte per value
// (the value itself), so a level holding it encoded uses half the decoded
// bytes and the decoder is easy to check.
ChunkKv WithEncoding(int64_t tokens, float value) {
  ChunkKv kv = Chunk(tokens, value);
  kv.enc.codec = KvCodec::kInt8;
  for (int part : {0, 1}) kv.enc.bytes[part] = at::full({tokens * 8}, static_cast<uint8_t>(value), at::kByte);
  return kv;
}

// An encoded CPU level holds only the encoded bytes and counts them; a GPU
// victim moves down as its encoded bytes (never decoded or encoded on the
// way); a CPU hit is decoded once, whether it moves up or stays, and under
// the score policy its later promotion takes the copy that was served.
TEST(TieredCache, AnEncodedLevelHoldsTheEncodedBytes) {
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kScore}) {
    SCOPED_TRACE(static_cast<int>(policy));
    TierOptions opt;
    opt.policy = policy;
    opt.levels = Levels(256, 3 * 128);  // GPU: one 8-token chunk decoded; CPU: three encoded
    opt.levels[1].encoded = true;
    int decodes = 0;
    opt.decoded_bytes = 256;  // 8 tokens x 2 heads x 4 dims, half, keys and values
    opt.decode = [&](ChunkKv* kv) {
      ++decodes;
      const int64_t tokens = kv->enc.bytes[0].numel() / 8;
      kv->k = kv->enc.bytes[0].to(at::kHalf).reshape({tokens, 2, 4});
      kv->v = kv->enc.bytes[1].to(at::kHalf).reshape({tokens, 2, 4});
    };
    auto cache = TieredCache::Create(opt);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    TieredCache& c = **cache;
    for (uint64_t k : {1, 2, 3, 4}) {
      c.PutIn(k, WithEncoding(8, static_cast<float>(k)), Tier::kGpu);  // each evicts the one before it
    }
    EXPECT_EQ(c.Where(4), Tier::kGpu);
    for (uint64_t k : {1, 2, 3}) EXPECT_EQ(c.Where(k), Tier::kCpu);
    EXPECT_EQ(c.used(Tier::kGpu), 256);
    EXPECT_EQ(c.used(Tier::kCpu), 3 * 128);
    EXPECT_EQ(decodes, 0);
    Tier t;
    int64_t served = 0;
    auto hit = c.Get(2, &t, &served);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(t, Tier::kCpu);
    EXPECT_EQ(served, 128);
    EXPECT_EQ(decodes, 1);
    EXPECT_EQ(hit->k[7][1][3].item<float>(), 2.0f);
    EXPECT_EQ(hit->v[0][0][0].item<float>(), 2.0f);
    EXPECT_EQ(c.entries(Tier::kGpu) + c.entries(Tier::kCpu), 4u);  // LRU swapped 2 and 4; score left them
    EXPECT_EQ(c.used(Tier::kCpu), 3 * 128);
    EXPECT_EQ(c.counters().bytes_served[Tier::kCpu], 128);
    if (policy == PolicyKind::kScore) {
      // Its observation promotes it past 4 (never observed) as it was served:
      // no second decode, no second copy up; 4 goes down as its encoded bytes.
      c.Observe({{2, 1.0}});
      EXPECT_EQ(c.Where(2), Tier::kGpu);
      EXPECT_EQ(c.Where(4), Tier::kCpu);
      EXPECT_EQ(decodes, 1);
      auto again = c.Get(2, &t);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(t, Tier::kGpu);
      EXPECT_EQ(again->k.data_ptr(), hit->k.data_ptr());
      EXPECT_EQ(again->v.data_ptr(), hit->v.data_ptr());
      EXPECT_EQ(c.used(Tier::kGpu), 256);
      EXPECT_EQ(c.used(Tier::kCpu), 3 * 128);
      EXPECT_EQ(decodes, 1);
    }
  }
  TierOptions no_decoder;
  no_decoder.levels = Levels(256, 256);
  no_decoder.levels[1].encoded = true;
  EXPECT_FALSE(TieredCache::Create(no_decoder).ok());
}

// Get copies and decodes what it serves from a lower level with no lock
// held: another thread may use the cache meanwhile (here, from inside the
// decoder; were the lock held, that thread would wait until the decode ends).
TEST(TieredCache, AServedHitIsDecodedWithNoLockHeld) {
  for (PolicyKind policy : {PolicyKind::kLru, PolicyKind::kScore}) {
    SCOPED_TRACE(static_cast<int>(policy));
    TierOptions opt;
    opt.policy = policy;
    opt.levels = Levels(256, 128);
    opt.levels[1].encoded = true;
    opt.decoded_bytes = 256;
    TieredCache* cache = nullptr;
    int decodes = 0, others_waited = 0;
    std::thread other;  // joined after Get: were the lock held, it could only finish then
    std::optional<Tier> seen;
    opt.decode = [&](ChunkKv* kv) {
      ++decodes;
      std::promise<void> done;
      std::future<void> finished = done.get_future();
      other = std::thread([&, done = std::move(done)]() mutable {
        seen = cache->Where(1);
        done.set_value();
      });
      if (finished.wait_for(std::chrono::seconds(10)) != std::future_status::ready) ++others_waited;
      kv->k = kv->enc.bytes[0].to(at::kHalf).reshape({8, 2, 4});
      kv->v = kv->enc.bytes[1].to(at::kHalf).reshape({8, 2, 4});
    };
    auto made = TieredCache::Create(opt);
    ASSERT_TRUE(made.ok()) << made.status().message();
    cache = made->get();
    cache->PutIn(1, WithEncoding(8, 1.0f), Tier::kCpu);
    ASSERT_EQ(cache->Where(1), Tier::kCpu);
    Tier t;
    auto hit = cache->Get(1, &t);
    other.join();
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(t, Tier::kCpu);
    EXPECT_EQ(hit->k[7][1][3].item<float>(), 1.0f);
    EXPECT_EQ(decodes, 1);
    EXPECT_EQ(others_waited, 0);
    EXPECT_EQ(seen, Tier::kCpu);  // still in its level while it was served
    // Then placed as before: LRU moves it to the top; the score policy waits for its observation.
    EXPECT_EQ(cache->Where(1), policy == PolicyKind::kLru ? Tier::kGpu : Tier::kCpu);
  }
}

TEST(TieredCache, LevelsAreCheckedWhenMade) {
  TierOptions twice;
  twice.levels = {Levels(256, 0)[0], Levels(256, 0)[0]};
  EXPECT_FALSE(TieredCache::Create(twice).ok());
  TierOptions negative;
  negative.levels = Levels(-1, 0);
  EXPECT_FALSE(TieredCache::Create(negative).ok());
}

}  // namespace
}  // namespace impress
