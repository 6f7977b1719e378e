// The remote tier's pieces that need no cluster: hash slots as the Redis
// Cluster specification defines them (its worked examples), content keys as a
// hash chain, and cluster addresses. tests/remote_tier.sh runs the tier
// against a real cluster.
#include <gtest/gtest.h>

#include <cstring>

#include "remote/content_key.h"
#include "remote/redis_cluster.h"
#include "remote/remote_store.h"

namespace impress {
namespace {

uint16_t Slot(const char* key) { return KeySlot(key, std::strlen(key)); }

TEST(KeySlot, MatchesTheClusterSpecification) {
  // CRC16/XMODEM's check value: crc("123456789") = 0x31C3.
  EXPECT_EQ(Slot("123456789"), 0x31C3);
  // The specification's hash-tag examples.
  EXPECT_EQ(Slot("{user1000}.following"), Slot("user1000"));
  EXPECT_EQ(Slot("{user1000}.followers"), Slot("user1000"));
  EXPECT_EQ(Slot("foo{{bar}}zap"), Slot("{bar"));     // up to the first '}' after the first '{'
  EXPECT_EQ(Slot("foo{bar}{zap}"), Slot("bar"));      // only the first tag counts
  EXPECT_NE(Slot("foo{}{bar}"), Slot("bar"));         // an empty first tag: the whole key
  EXPECT_LT(Slot("anything"), 16384);
}

TEST(KeySlot, PartsOfAChunkShareItsSlot) {
  const ContentKey k = RootKey("model/float16/c64");
  const std::string marker = MarkerKeyName(k);
  for (int l : {0, 7, 29})
    for (int p = 0; p < 3; ++p) {
      const std::string part = PartKeyName(k, l, p);
      EXPECT_EQ(KeySlot(part.data(), part.size()), KeySlot(marker.data(), marker.size())) << part;
    }
}

TEST(ContentKey, IsAHashChainOverTokensAndFingerprint) {
  std::vector<int32_t> a(128), b(128);
  for (int i = 0; i < 128; ++i) a[i] = b[i] = 1000 + i;
  b[100] = 7;  // differs in the second chunk only
  const ContentKey root = RootKey("m1/float16/c64");
  const auto ka = ChainKeys(root, a, 0, 2, 64), kb = ChainKeys(root, b, 0, 2, 64);
  EXPECT_EQ(ka[0], kb[0]);  // same first chunk, same key
  EXPECT_NE(ka[1], kb[1]);
  EXPECT_EQ(ka[1], NextKey(ka[0], a.data() + 64, 64));  // chained: each key from its parent
  EXPECT_EQ(ChainKeys(ka[0], a, 1, 1, 64)[0], ka[1]);
  // Another fingerprint (model, dtype or chunk size) names every chunk differently.
  EXPECT_NE(ChainKeys(RootKey("m2/float16/c64"), a, 0, 1, 64)[0], ka[0]);
  // The same tokens after another first chunk are another chunk.
  std::vector<int32_t> c = a;
  c[0] = 5;
  EXPECT_NE(ChainKeys(root, c, 0, 2, 64)[1], ka[1]);
  EXPECT_EQ(ka[0].Hex().size(), 32u);
  EXPECT_EQ(ka[0].Hex(), ChainKeys(root, a, 0, 1, 64)[0].Hex());  // deterministic: machines agree
}

TEST(RedisUrl, ParsesSeedsAndNamesTheBadOne) {
  auto seeds = ParseRedisUrl("redis://127.0.0.1:7000,10.0.0.2:7001");
  ASSERT_TRUE(seeds.ok());
  EXPECT_EQ(*seeds, (std::vector<std::string>{"127.0.0.1:7000", "10.0.0.2:7001"}));
  EXPECT_TRUE(ParseRedisUrl("host:6379").ok());
  for (const char* bad : {"redis://", "redis://host", "redis://host:0", "redis://host:99999", "redis://a:1,", "redis://:1"}) {
    auto r = ParseRedisUrl(bad);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(RemoteStore, AnUnreachableClusterIsAnErrorNamingTheAddress) {
  auto r = RemoteStore::Connect(RemoteOptions{"redis://127.0.0.1:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("127.0.0.1:1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace impress
