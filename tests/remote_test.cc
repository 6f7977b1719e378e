// The remote tier's pieces that need no cluster: hash slots as the Redis
// Cluster specification defines them (its worked examples), content keys as a
// hash chain, cluster addresses, and the reply reader against the RESP
// specification's encodings over a socket pair. tests/remote_tier.sh runs
// the tier against a real cluster.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "remote/content_key.h"
#include "remote/redis_cluster.h"
#include "remote/remote_store.h"
#include "remote/resp_reader.h"
#include "common/crc32c.h"

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

TEST(RemoteStore, AnUnknownSchemeIsAnErrorNamingIt) {
  auto r = RemoteStore::Connect(RemoteOptions{"s3://bucket/prefix"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown scheme 's3'"), std::string::npos) << r.status().message();
}

// A socket pair whose far end `bytes` are written to (from a thread, in
// pieces of `piece` bytes, so that replies straddle receives), then closed.
class Wire {
 public:
  Wire(std::string bytes, size_t piece) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    near_ = fds[0];
    timeval tv{2, 0};
    setsockopt(near_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    writer_ = std::thread([far = fds[1], bytes = std::move(bytes), piece] {
      for (size_t at = 0; at < bytes.size(); at += piece) {
        const size_t n = std::min(piece, bytes.size() - at);
        if (write(far, bytes.data() + at, n) != static_cast<ssize_t>(n)) break;
        std::this_thread::yield();
      }
      close(far);
    });
  }
  ~Wire() {
    writer_.join();
    close(near_);
  }
  int fd() const { return near_; }

 private:
  int near_ = -1;
  std::thread writer_;
};

TEST(RespReader, ReadsEveryReplyTypeAndLandsStringsInPlace) {
  std::string value(5000, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 7);
  const std::string bytes = "+OK\r\n-MOVED 3999 127.0.0.1:6381\r\n:42\r\n$-1\r\n$" + std::to_string(value.size()) + "\r\n" + value +
                            "\r\n$3\r\nabc\r\n$0\r\n\r\n";
  for (size_t piece : {1, 7, 512, 100000}) {
    Wire w(bytes, piece);
    RespReader in(w.fd());
    RespReply r;
    ASSERT_TRUE(in.Next(nullptr, &r).ok());
    EXPECT_EQ(r.type, RespReply::kStatus);
    EXPECT_EQ(r.text, "OK");
    ASSERT_TRUE(in.Next(nullptr, &r).ok());
    EXPECT_EQ(r.type, RespReply::kError);
    EXPECT_EQ(r.text, "MOVED 3999 127.0.0.1:6381");
    ASSERT_TRUE(in.Next(nullptr, &r).ok());
    EXPECT_EQ(r.type, RespReply::kInteger);
    EXPECT_EQ(r.integer, 42);
    Landing land;
    std::vector<char> body(value.size() - 4);
    land.head_bytes = 4;
    land.body = body.data();
    land.body_bytes = body.size();
    ASSERT_TRUE(in.Next(&land, &r).ok());
    EXPECT_EQ(r.type, RespReply::kNil);  // nil lands nothing
    ASSERT_TRUE(in.Next(&land, &r).ok());
    EXPECT_EQ(r.type, RespReply::kString);
    EXPECT_TRUE(r.landed);
    EXPECT_TRUE(r.text.empty());
    EXPECT_EQ(std::memcmp(land.head, value.data(), 4), 0);
    EXPECT_EQ(std::memcmp(body.data(), value.data() + 4, body.size()), 0) << piece;
    EXPECT_EQ(land.body_crc, Crc32cPortable(value.data() + 4, body.size()));
    ASSERT_TRUE(in.Next(&land, &r).ok());  // a string of another size does not land
    EXPECT_FALSE(r.landed);
    EXPECT_EQ(r.len, 3u);
    EXPECT_EQ(r.text, "abc");
    ASSERT_TRUE(in.Next(nullptr, &r).ok());
    EXPECT_EQ(r.type, RespReply::kString);
    EXPECT_EQ(r.len, 0u);
    EXPECT_FALSE(in.buffered());
    EXPECT_TRUE(in.Next(nullptr, &r).IsIOError());  // the server closed
  }
}

TEST(RespReader, MalformedRepliesAreErrors) {
  for (const char* bad : {"?x\r\n", ":12a\r\n", "$5\r\nabc\r\n", "$3\r\nabcde", "+OK\n", "*2\r\n$1\r\na\r\n", "$3\r\nab"}) {
    Wire w(bad, 100);
    RespReader in(w.fd());
    RespReply r;
    const Status st = in.Next(nullptr, &r);
    EXPECT_TRUE(st.IsIOError()) << bad;
  }
  Wire w(std::string(600, 'a'), 600);  // a line longer than the reader's buffer
  RespReader in(w.fd());
  RespReply r;
  EXPECT_NE(in.Next(nullptr, &r).message().find("longer than"), std::string::npos);
}

TEST(RemoteStore, AnUnreachableClusterIsAnErrorNamingTheAddress) {
  auto r = RemoteStore::Connect(RemoteOptions{"redis://127.0.0.1:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("127.0.0.1:1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace impress
