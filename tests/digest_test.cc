// The digest system's parts against their definitions: a digest holds its
// chunk's per-channel min and max and every key to within half a step; a
// planted key makes its chunk rank first; whole chunks are kept with the
// sink's and the recent ones'; a store keeps digests durably, refuses to
// serve the digest system without them, and finds a damaged one.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "codec/key_digest.h"
#include "common/named.h"
#include "select/digest.h"
#include "select/memory_source.h"
#include "store/chunk_store.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

// Keys [c, h, d] in fp16 with an offset and a spread, the same on every call.
at::Tensor SeededKeys(int64_t c, int64_t h, int64_t d) {
  at::manual_seed(7);
  return (at::randn({c, h, d}) * 3 + 1).to(at::kHalf);
}

TEST(DigestTest, HoldsEachChannelsMinAndMaxAndEveryKeyWithinHalfAStep) {
  const int64_t c = 64, h = 3, d = 64;
  const at::Tensor keys = SeededKeys(c, h, d);
  const at::Tensor digest = EncodeDigest(DigestCodec::kInt4, keys);
  ASSERT_EQ(static_cast<size_t>(digest.numel()), DigestBytes(DigestCodec::kInt4, c, h, d));
  const at::Tensor got = DecodeDigest(DigestCodec::kInt4, digest, c, h, d).to(at::kFloat), want = keys.to(at::kFloat);
  const at::Tensor lo = std::get<0>(want.min(0)), hi = std::get<0>(want.max(0));  // computed directly
  EXPECT_TRUE(std::get<0>(got.min(0)).equal(lo));  // code 0 decodes to the min itself
  // Code 15 decodes to zero + 15 * scale, with scale rounded to fp16: within 15 of its half-ulps.
  const at::Tensor step = (hi - lo) / 15;
  EXPECT_LE((std::get<0>(got.max(0)) - hi).abs().max().item<float>(), (15 * step * 1e-3).max().item<float>() + 1e-2);
  // Every key is its channel's nearest code: within half a step (and fp16 rounding).
  EXPECT_TRUE(((got - want).abs() <= step.unsqueeze(0) * 0.5 + 1e-2).all().item<bool>());
}

// The int8 digest is the int8 key codec: each (token, head) at 8 bits
// between -absmax and absmax, so every key within half of absmax / 127.
TEST(DigestTest, AnInt8DigestHoldsEveryKeyWithinHalfAStepOfItsRow) {
  const int64_t c = 64, h = 3, d = 64;
  const at::Tensor keys = SeededKeys(c, h, d);
  const at::Tensor digest = EncodeDigest(DigestCodec::kInt8, keys);
  ASSERT_EQ(static_cast<size_t>(digest.numel()), DigestBytes(DigestCodec::kInt8, c, h, d));
  EXPECT_GT(DigestBytes(DigestCodec::kInt8, c, h, d), DigestBytes(DigestCodec::kInt4, c, h, d));
  const at::Tensor got = DecodeDigest(DigestCodec::kInt8, digest, c, h, d).to(at::kFloat), want = keys.to(at::kFloat);
  const at::Tensor absmax = std::get<0>(want.abs().max(2, true));  // [C, h, 1], computed directly
  // Half a step, plus the fp16 rounding of the scale (times a code of at most
  // 127) and of the decoded key: each at most 2^-11 relative.
  const double u = 1.0 / 2048;
  const at::Tensor bound = absmax / 127 * 0.5 + absmax * u + (want.abs() + absmax / 254) * u;
  EXPECT_TRUE(((got - want).abs() <= bound).all().item<bool>());
  // Finer than int4's per-channel step on the same keys.
  const at::Tensor err4 = (DecodeDigest(DigestCodec::kInt4, EncodeDigest(DigestCodec::kInt4, keys), c, h, d)
                               .to(at::kFloat) - want).abs().mean();
  EXPECT_LT((got - want).abs().mean().item<float>(), err4.item<float>() / 4);
}

TEST(DigestTest, ThePrefixRoundTripIsChunkByChunk) {
  at::manual_seed(3);
  const at::Tensor k = at::randn({2, 100, 32});  // [Hkv, P, d]; the last chunk is short
  const at::Tensor got = DigestRoundTrip(k, 32, DigestCodec::kInt4);
  for (int64_t s = 0; s < 100; s += 32) {
    const int64_t n = std::min<int64_t>(32, 100 - s);
    const at::Tensor part = k.narrow(1, s, n).transpose(0, 1).contiguous();
    const at::Tensor digest = EncodeDigest(DigestCodec::kInt4, part);
    at::Tensor want = at::empty({2, n, 32});
    DecodeDigestRows(DigestCodec::kInt4, digest, want, 0, n);
    EXPECT_TRUE(got.narrow(1, s, n).equal(want)) << "chunk at " << s;
    // fp32 rows that round to the fp16 keys DecodeDigest gives
    EXPECT_TRUE(want.to(at::kHalf).equal(DecodeDigest(DigestCodec::kInt4, digest, n, 2, 32).transpose(0, 1))) << "chunk at " << s;
  }
}

// Random keys, with one key of KV head 1 at position `at` made to match the
// queries of that head's group: its chunk must rank first by either score.
TEST(DigestTest, APlantedKeyRanksItsChunkFirst) {
  at::manual_seed(11);
  const int64_t hq = 6, hkv = 3, t = 8, p = 512, d = 32, c = 32, at_pos = 333;
  const at::Tensor q = at::randn({hq, t, d});
  at::Tensor keys = at::randn({hkv, p, d});
  const at::Tensor dir = q.narrow(0, 2, 2).mean({0, 1});  // group of KV head 1: query heads 2, 3
  keys[1][at_pos] = dir / dir.norm() * 12;
  const at::Tensor new_k = at::randn({hkv, t, d});
  const at::Tensor chunk_of = at::arange(p, at::kLong).div(c, "floor");
  const at::Tensor dk = DigestRoundTrip(keys, c, DigestCodec::kInt4);
  for (DigestScore how : {DigestScore::kKeys, DigestScore::kBound, DigestScore::kRowMax}) {
    const at::Tensor scores = DigestChunkScores(q, dk, new_k, 0.18f, 0, chunk_of, p / c, how);
    ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{hkv, p / c}));
    EXPECT_EQ(scores[1].argmax().item<int64_t>(), at_pos / c) << static_cast<int>(how);
    EXPECT_EQ(DigestChunkOrder(scores, DigestGroups::kRank)[0].item<int64_t>(), at_pos / c) << static_cast<int>(how);
  }
  // Scored from an int8 digest's codes, the query rows quantized too.
  MemorySource src(keys, at::zeros_like(keys), c, DigestCodec::kInt8);
  Int8Keys codes;
  ASSERT_TRUE(src.DigestInt8(0, &codes).ok());
  const at::Tensor scores = DigestChunkScoresInt8(q, codes, new_k, 0.18f, 0, chunk_of, p / c);
  EXPECT_EQ(scores[1].argmax().item<int64_t>(), at_pos / c);
  EXPECT_EQ(DigestChunkOrder(scores, DigestGroups::kRank)[0].item<int64_t>(), at_pos / c);
}

// kRowMax by its definition: each query row's softmax over the prefix keys
// and the new keys it may see (built here with one mask over the whole
// concatenation), summed per chunk; the best row, then the best head of the group.
TEST(DigestTest, RowMaxIsEachChunksBestRowsAttention) {
  at::manual_seed(5);
  const int64_t hq = 4, hkv = 2, t = 6, p = 40, d = 16, c = 8, g = hq / hkv;
  const float scale = 0.25f;
  const at::Tensor q = at::randn({hq, t, d}), keys = at::randn({hkv, p, d}), new_k = at::randn({hkv, t, d});
  const at::Tensor chunk_of = at::arange(p, at::kLong).div(c, "floor");
  for (int64_t window : {int64_t{0}, int64_t{2}}) {
    const int64_t w = window == 0 ? t : window;
    at::Tensor want = at::zeros({hkv, p / c});
    for (int64_t h = 0; h < hq; ++h) {
      const at::Tensor all_k = at::cat({keys[h / g], new_k[h / g]}, 0);  // [P + T, d]
      for (int64_t r = t - w; r < t; ++r) {
        at::Tensor logits = at::matmul(all_k, q[h][r] * scale);
        logits.slice(0, p + r + 1).fill_(-std::numeric_limits<float>::infinity());  // new keys after row r
        const at::Tensor mass = at::zeros({p / c}).index_add_(0, chunk_of, at::softmax(logits, 0).slice(0, 0, p));
        want[h / g] = at::maximum(want[h / g], mass);
      }
    }
    const at::Tensor got = DigestChunkScores(q, keys, new_k, scale, window, chunk_of, p / c, DigestScore::kRowMax);
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << "window " << window;
  }
}

// Pooling: a chunk that holds only the tokens right after a found token
// scores as that token's chunk does, as far as the pool reaches.
TEST(DigestTest, APooledScoreReachesTheNextChunksFirstTokens) {
  at::manual_seed(9);
  const int64_t hq = 2, hkv = 1, t = 2, p = 64, d = 32, c = 16, at_pos = 31;  // the last token of chunk 1
  const at::Tensor q = at::randn({hq, t, d});
  at::Tensor keys = at::randn({hkv, p, d}) * 0.1;
  const at::Tensor dir = q.mean({0, 1});
  keys[0][at_pos] = dir / dir.norm() * 20;
  const at::Tensor new_k = at::randn({hkv, t, d}) * 0.1;
  const at::Tensor chunk_of = at::arange(p, at::kLong).div(c, "floor");
  for (DigestScore how : {DigestScore::kKeys, DigestScore::kRowMax}) {
    const at::Tensor plain = DigestChunkScores(q, keys, new_k, 0.18f, 0, chunk_of, p / c, how);
    const at::Tensor pooled = DigestChunkScores(q, keys, new_k, 0.18f, 0, chunk_of, p / c, how, 0, 3);
    EXPECT_LT(plain[0][2].item<float>(), 0.5 * plain[0][1].item<float>()) << static_cast<int>(how);
    // Position 32 (chunk 2's first) takes position 31's score with a pool of 3;
    // position 31 holds nearly all of chunk 1's.
    EXPECT_GE(pooled[0][2].item<float>(), 0.9 * plain[0][1].item<float>()) << static_cast<int>(how);
    EXPECT_LT(pooled[0][0].item<float>(), 0.1 * pooled[0][2].item<float>()) << static_cast<int>(how);  // out of reach
  }
}

TEST(DigestTest, KeepsWholeChunksTheSinksAndTheRecentFirst) {
  // Six chunks of 4 in a reordered layout: chunk i holds positions i, i+6, i+12, i+18.
  const at::Tensor chunk_of = at::arange(24, at::kLong).remainder(6);
  const at::Tensor order = at::tensor(std::vector<int64_t>{3, 1, 4, 0, 5, 2}, at::kLong);
  auto chunks_of = [&](const at::Tensor& pos) { return std::get<0>(at::_unique(chunk_of.index_select(0, pos))); };
  // k = 5 and nothing forced: the two best chunks (8 >= 5 positions).
  at::Tensor pos = DigestKeptPositions(order, chunk_of, 6, 5, 0, 0);
  EXPECT_TRUE(chunks_of(pos).equal(at::tensor(std::vector<int64_t>{1, 3}, at::kLong)));
  EXPECT_TRUE(pos.equal(std::get<0>(pos.sort())));
  EXPECT_EQ(pos.numel(), 8);
  // The first two positions (chunks 0, 1) and the last one (chunk 5) first, then the best: 3.
  pos = DigestKeptPositions(order, chunk_of, 6, 13, 2, 1);
  EXPECT_TRUE(chunks_of(pos).equal(at::tensor(std::vector<int64_t>{0, 1, 3, 5}, at::kLong)));
  // Forced chunks beyond k are all kept.
  EXPECT_EQ(DigestKeptPositions(order, chunk_of, 6, 1, 24, 0).numel(), 24);
}

StoreOptions DigestStore(bool digests, DigestCodec codec = DigestCodec::kInt4) {
  StoreOptions o;
  o.geometry = ChunkGeometry{16, 2, 2, 32, 1, 2};
  if (digests) o.geometry.digests = codec;
  o.fingerprint = "test-model/float16/c16";
  return o;
}

EncodedChunk KeysChunk(const ChunkGeometry& g, uint64_t id, int layer) {
  EncodedChunk e;
  e.chunk_id = id, e.layer = layer;
  const at::Tensor k = at::randn({g.chunk_tokens, g.kv_heads, g.head_dim}).to(at::kHalf);
  e.bytes = {k.view(at::kByte).flatten(), at::randn({g.chunk_tokens, g.kv_heads, g.head_dim}).to(at::kHalf).view(at::kByte).flatten(),
             k.narrow(1, 0, g.probe_kv_heads).contiguous().view(at::kByte).flatten()};
  e.decoded = {k, {}, {}};
  if (g.digests) e.digest = EncodeDigest(*g.digests, k);
  return e;
}

TEST(DigestTest, AStoreKeepsDigestsAcrossReopeningAndFindsADamagedOne) {
  TempDir dir;
  std::vector<EncodedChunk> w;
  {
    auto s = ChunkStore::Open(dir.path(), DigestStore(true), nullptr);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (uint64_t id = 1; id <= 3; ++id)
      for (int l = 0; l < 2; ++l) w.push_back(KeysChunk((*s)->geometry(), id, l));
    ASSERT_TRUE((*s)->Commit(w, "m").ok());
    EXPECT_EQ((*s)->digest_bytes(), 6 * (*s)->geometry().DigestBytes());
  }
  {  // reopened: every digest read back from disk, checked, resident
    auto s = ChunkStore::Open(dir.path(), DigestStore(false), nullptr);  // a caller not asking still gets them
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE((*s)->geometry().digests);
    for (const EncodedChunk& e : w) EXPECT_TRUE((*s)->Digest(e.chunk_id, e.layer).equal(e.digest));
    uint64_t checked = 0;
    EXPECT_TRUE((*s)->Verify(&checked).ok());
    std::vector<uint64_t> ids = {2};
    ASSERT_TRUE((*s)->Free(ids, nullptr).ok());
    EXPECT_FALSE((*s)->Digest(2, 0).defined());
    EXPECT_EQ((*s)->digest_bytes(), 4 * (*s)->geometry().DigestBytes());
  }
  {  // one byte of a digest flipped: opening names the chunk
    const ChunkGeometry& g = DigestStore(true).geometry;
    std::fstream f(dir.path() + "/chunks.dat", std::ios::in | std::ios::out | std::ios::binary);
    const std::streamoff digest_at = g.PartStride(0) + g.PartStride(1) + g.PartStride(2) + 5;  // first record's digest
    f.seekg(digest_at);
    char b = 0;
    f.read(&b, 1);
    b ^= 0x40;
    f.seekp(digest_at);
    f.write(&b, 1);
  }
  auto s = ChunkStore::Open(dir.path(), DigestStore(true), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsCorruption()) << s.status().message();
  EXPECT_NE(s.status().message().find("chunk 1 layer 0 part 3 fails its checksum"), std::string::npos)
      << s.status().message();
}

TEST(DigestTest, AStoreWithoutDigestsIsRefusedToTheDigestSystem) {
  TempDir dir;
  ASSERT_TRUE(ChunkStore::Open(dir.path(), DigestStore(false), nullptr).ok());
  auto s = ChunkStore::Open(dir.path(), DigestStore(true), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), dir.path() + ": the store keeps no chunk digests (written before them, or for "
                                               "systems that need none); the digest system needs a store made with "
                                               "them: a new --store folder");
}

// A store records its digests' codec: reopened it serves them as written
// (int8 digests, twice int4's bytes) to a caller not asking, and refuses a
// caller asking for the other codec with one line naming the store.
TEST(DigestTest, AStoreKeepsItsDigestCodecAndRefusesTheOther) {
  TempDir dir;
  std::vector<EncodedChunk> w;
  {
    auto s = ChunkStore::Open(dir.path(), DigestStore(true, DigestCodec::kInt8), nullptr);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (int l = 0; l < 2; ++l) w.push_back(KeysChunk((*s)->geometry(), 1, l));
    ASSERT_TRUE((*s)->Commit(w, "m").ok());
    const ChunkGeometry& g = (*s)->geometry();
    EXPECT_EQ(g.DigestBytes(), DigestBytes(DigestCodec::kInt8, 16, 2, 32));
    EXPECT_GT(g.DigestBytes(), DigestBytes(DigestCodec::kInt4, 16, 2, 32));
  }
  {
    auto s = ChunkStore::Open(dir.path(), DigestStore(false), nullptr);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ((*s)->geometry().digests, DigestCodec::kInt8);
    for (const EncodedChunk& e : w) EXPECT_TRUE((*s)->Digest(e.chunk_id, e.layer).equal(e.digest));
  }
  auto s = ChunkStore::Open(dir.path(), DigestStore(true, DigestCodec::kInt4), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), dir.path() + ": the store keeps int8 chunk digests, not int4: --digest-codec int8, "
                                               "or a new --store folder");
}

}  // namespace
}  // namespace impress
