// Requests through the tiers: full reuse (as) equals recomputation at the
// stored precision, a reopened store serves what was committed, and a corrupt
// chunk is recomputed rather than served.
#include "request/request.h"
#include "select/selector.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <filesystem>
#include <functional>
#include <fstream>

#include "codec/kv_codec_tensor.h"
#include "model/model.h"
#include "model_store_fixture.h"
#include "store_peer.h"

namespace impress {
namespace {

using testing::TempDir;

System Named(const char* name, double retention = 1.0) { return *ParseSystem(name, retention); }

class ReuseTest : public testing::ModelStoreTest {
 protected:
  // Stores a 32-token prefix with `as` and runs the context on the clean
  // store, damages the store's files with `damage` (given its folder),
  // reopens it with cold caches and runs the context again: the request
  // recomputes (counted, its error naming `why`), never fails, writes the
  // damaged chunks back, and answers as the clean store did, bit for bit;
  // the next request reads the healed store and recomputes nothing.
  void ExpectRecomputedAfter(const std::function<void(const TempDir&)>& damage, const std::string& why,
                             KvCodec codec = KvCodec::kNone) {
    TempDir dir;
    std::vector<int32_t> ctx = Tokens(40, 3);
    std::unique_ptr<RewindableKv> kv;
    PrefixStoreOptions o = Options(dir.path());
    o.kv_codec = codec;
    o.tiers = TiersOver(CacheLevels({}));  // every load reads the disk
    at::Tensor want;
    {
      auto store = PrefixStore::Open(*model_, o);
      RequestTrace first, clean;
      ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), ctx, 32, &kv, &first).ok());
      ASSERT_EQ(first.stored_chunks, 2);
      auto w = RunRequest(Named("as"), *model_, store->get(), ctx, 32, &kv, &clean);
      ASSERT_TRUE(w.ok()) << w.status().message();
      ASSERT_EQ(clean.reused_tokens, 32);
      want = *w;
    }
    damage(dir);
    auto store = PrefixStore::Open(*model_, o);
    ASSERT_TRUE(store.ok()) << store.status().message();
    RequestTrace at, after;
    auto got = RunRequest(Named("as"), *model_, store->get(), ctx, 32, &kv, &at);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(at.recomputed_after_error);
    EXPECT_NE(at.error.find(why), std::string::npos) << at.error;
    EXPECT_GE(at.healed_chunks, 1);
    EXPECT_EQ(at.reused_tokens, 32);  // served from the healed store
    EXPECT_TRUE(at::equal(*got, want));
    auto again = RunRequest(Named("as"), *model_, store->get(), ctx, 32, &kv, &after);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_FALSE(after.recomputed_after_error) << after.error;
    EXPECT_EQ(after.healed_chunks, 0);
    EXPECT_TRUE(at::equal(*again, want));
    uint64_t checked = 0;
    EXPECT_TRUE(PrefixStoreTestPeer::disk(**store).Verify(&checked).ok());
  }
  // What a codec store serves `ctx` with its first 64 tokens (4 chunks of
  // 16) stored: the context's KV computed whole, those positions put
  // through the codec chunk by chunk, the rest computed over them; the
  // last token's log-probabilities.
  at::Tensor CodecReference(KvCodec codec, const std::vector<int32_t>& ctx) {
    const int layers = model_->config().num_layers;
    DenseKvCache ref(layers);
    model_->Forward(ctx, 0, ref);
    for (int l = 0; l < layers; ++l) RoundTripPrefix(codec, 16, 64, ref.keys(l), ref.values(l));
    ref.Truncate(64);
    return at::log_softmax(model_->Forward(std::vector<int32_t>(ctx.begin() + 64, ctx.end()), 64, ref)[0], -1).cpu();
  }
  // Bytes of the keys and values of a 4-chunk prefix's chunk layers stored with `codec`.
  static int64_t EncodedPrefixBytes(const ChunkGeometry& g, KvCodec codec) {
    const KvCodec first = ChunkCodec(codec, 0);
    return g.layers * static_cast<int64_t>(g.PartBytes(0, first) + g.PartBytes(1, first) +
                                           3 * (g.PartBytes(0, codec) + g.PartBytes(1, codec)));
  }
  // Stores a 160-token prefix with `as` in a fresh store whose caches hold
  // nothing (every load reads the disk), then runs `sys` on it plus 12 tokens.
  at::Tensor OnStoredPrefix(const System& sys, RequestTrace* t, const RequestOptions& ro = {}) {
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.tiers = TiersOver(CacheLevels({}));
    o.policy = store_policy_;
    if (store_digests_) o.digests = DigestOptions().codec;
    auto store = PrefixStore::Open(*model_, o);
    EXPECT_TRUE(store.ok()) << store.status().message();
    std::vector<int32_t> prefix = Tokens(160, 4), ctx = prefix;
    for (int32_t tok : Tokens(12, 77)) ctx.push_back(tok);
    std::unique_ptr<RewindableKv> kv;
    RequestTrace warm;
    EXPECT_TRUE(RunRequest(Named("as"), *model_, store->get(), prefix, 160, &kv, &warm).ok());
    auto r = RunRequest(sys, *model_, store->get(), ctx, 160, &kv, t, ro);
    EXPECT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(t->reused_tokens, 160);
    return r.ok() ? *r : at::Tensor();
  }
  PolicyKind store_policy_ = PolicyKind::kLru;  // OnStoredPrefix's store's cache policy
  bool store_digests_ = false;                  // ... and whether it keeps chunk digests
  // impress-itf at 10% that never trusts its probes (alpha 0), always does
  // (a huge alpha puts t near 0), and always does with the chunk unit.
  struct ItfVariants {
    System never, always, chunked;
  };
  static ItfVariants Itf() {
    ItfVariants v{Named("impress-itf", 0.1), Named("impress-itf", 0.1), Named("impress-itf", 0.1)};
    v.never.select.alpha = 0;
    v.always.select.alpha = v.chunked.select.alpha = 1000;
    v.chunked.select.unit = ItfUnit::kChunk;
    return v;
  }
  // Two runs of one system that must agree on what attention saw and on
  // every selection: logits, K/V chunks per layer, chunks served, kept tokens
  // and fallbacks per layer.
  void ExpectSameSelection(const at::Tensor& a, const RequestTrace& at, const at::Tensor& b, const RequestTrace& bt) {
    EXPECT_TRUE(a.equal(b));
    EXPECT_EQ(at.layer_kv_chunks, bt.layer_kv_chunks);
    EXPECT_EQ(at.load.chunks, bt.load.chunks);
    EXPECT_EQ(at.load.read[Tier::kDisk], bt.load.read[Tier::kDisk]);
    for (int l = 0; l < model_->config().num_layers; ++l) {
      EXPECT_EQ(at.selection.kept[l], bt.selection.kept[l]) << "layer " << l;
      EXPECT_EQ(at.selection.fallbacks[l], bt.selection.fallbacks[l]) << "layer " << l;
    }
  }
  // What attention saw and every layer's selection (not the chunks served:
  // an unneeded guess is served too).
  void ExpectSameAttention(const at::Tensor& a, const RequestTrace& at, const at::Tensor& b, const RequestTrace& bt) {
    EXPECT_TRUE(a.equal(b));
    EXPECT_EQ(at.layer_kv_chunks, bt.layer_kv_chunks);
    EXPECT_EQ(at.selection.kept, bt.selection.kept);
  }

  // The digest system at 25% without a sink on a 160-token prefix stored
  // with `as`, the store reopened with empty caches big enough for every
  // chunk (no eviction), warmed as `warm` says; then the measured question
  // (seed 77), guessing `how`.
  enum class Warm { kNone, kOtherQuestion, kEveryChunk };
  at::Tensor OnReopenedStore(Speculation how, Warm warm, RequestTrace* trace) {
    store_digests_ = true;
    System sys = Named("digest", 0.25);
    sys.select.digest.sink_tokens = 0;  // at 160 tokens the default sink is 4 of the 10 chunks, in every set
    const std::vector<int32_t> prefix = Tokens(160, 4);
    auto with_question = [&](int seed) {
      std::vector<int32_t> ctx = prefix;
      for (int32_t tok : Tokens(12, seed)) ctx.push_back(tok);
      return ctx;
    };
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.digests = DigestOptions().codec;
    std::unique_ptr<RewindableKv> kv;
    {
      auto store = PrefixStore::Open(*model_, o);
      RequestTrace fill;
      EXPECT_TRUE(RunRequest(Named("as"), *model_, store->get(), prefix, 160, &kv, &fill).ok());
    }
    TierCounts bytes;
    bytes[Tier::kCpu] = 64 << 20;
    o.tiers = TiersOver(CacheLevels(bytes));
    auto store = PrefixStore::Open(*model_, o);
    if (warm != Warm::kNone) {  // a digest request with another question caches what it chose; `as` every chunk
      RequestTrace t;
      const System& by = warm == Warm::kOtherQuestion ? sys : Named("as");
      EXPECT_TRUE(RunRequest(by, *model_, store->get(), with_question(91), 160, &kv, &t).ok());
      EXPECT_GT(t.load.bytes[Tier::kDisk], 0);  // the caches started empty
    }
    auto r = RunRequest(sys, *model_, store->get(), with_question(77), 160, &kv, trace, RequestOptions{true, how});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : at::Tensor();
  }
};

TEST_P(ReuseTest, FullReuseEqualsRecompute) {
  TempDir dir;
  auto store = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::vector<int32_t> prefix = Tokens(100, 1);  // 6 whole chunks + 4 tokens
  std::unique_ptr<RewindableKv> kv;
  for (int q = 0; q < 3; ++q) {
    std::vector<int32_t> ctx = prefix;
    for (int32_t t : Tokens(9 + q, 50 + q)) ctx.push_back(t);
    RequestTrace rt, at;
    auto want = RunRequest(Named("recomp"), *model_, store->get(), ctx, 100, &kv, &rt);
    auto got = RunRequest(Named("as"), *model_, store->get(), ctx, 100, &kv, &at);
    ASSERT_TRUE(want.ok() && got.ok());
    // kv holds every token the context attends to: the whole context
    // computed, or the reused prefix and the rest computed after it.
    if (auto* dense = dynamic_cast<DenseKvCache*>(kv.get())) {
      EXPECT_EQ(at.reused_tokens, 0);
      EXPECT_EQ(dense->size(), static_cast<int64_t>(ctx.size()));
    } else {
      auto* selected = dynamic_cast<SelectedContextKv*>(kv.get());
      ASSERT_NE(selected, nullptr);
      EXPECT_EQ(at.reused_tokens + selected->tail().size(), static_cast<int64_t>(ctx.size()));
    }
    if (q == 0) {
      EXPECT_EQ(at.reused_tokens, 0);  // first sight: computed, then stored
      EXPECT_EQ(at.stored_chunks, 6);
    } else {
      EXPECT_EQ(at.reused_tokens, 96);  // whole chunks only; the 4-token tail is recomputed
      EXPECT_EQ(at.load.chunks, 6 * model_->config().num_layers);
    }
    // fp16-stored KV: log-probabilities agree to fp16 rounding, and the argmax is the same.
    EXPECT_LE((*got - *want).abs().max().item<double>(), 2e-2) << "request " << q;  // fp16 KV
    EXPECT_EQ(got->argmax().item<int64_t>(), want->argmax().item<int64_t>());
  }
}

TEST_P(ReuseTest, ReopenedStoreServesCommittedPrefixes) {
  TempDir dir;
  std::vector<int32_t> ctx = Tokens(70, 2);
  std::unique_ptr<RewindableKv> kv;
  {
    auto store = PrefixStore::Open(*model_, Options(dir.path()));
    RequestTrace t;
    ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, &t).ok());
    EXPECT_EQ(t.stored_chunks, 4);
  }
  auto store = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ(PrefixStoreTestPeer::index(**store).tree().chunk_count(), 4u);
  RequestTrace t;
  ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, &t).ok());
  EXPECT_EQ(t.reused_tokens, 64);
  EXPECT_EQ(t.load.bytes[Tier::kDisk], 4 * model_->config().num_layers * (*store)->chunk_kv_bytes());  // all from disk
}

TEST_P(ReuseTest, CorruptChunkIsRecomputedNotServed) {
  ExpectRecomputedAfter([](const TempDir& dir) {
    std::fstream f(dir.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x7f');
  }, "fails its checksum");
}

// A flipped byte in an int4-encoded part is caught by its checksum, like any other.
TEST_P(ReuseTest, CorruptEncodedChunkIsRecomputedNotServed) {
  ExpectRecomputedAfter([](const TempDir& dir) {
    std::fstream f(dir.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    f.put('\x5a');
  }, "fails its checksum", KvCodec::kInt4);
}

// A chunk file cut short: the request recomputes (counted), never fails the run.
TEST_P(ReuseTest, TruncatedChunkFileIsRecomputedNotAFailure) {
  ExpectRecomputedAfter([](const TempDir& dir) {
    std::filesystem::resize_file(dir.File("chunks.dat"), std::filesystem::file_size(dir.File("chunks.dat")) / 2);
  }, "past the end of the file");
}

// A store with a KV codec serves what its codec decodes: the reused prefix's
// chunks are the encoding of the first request's fp16 KV (int4 keeps the
// first chunk at int8), read from disk at their encoded size, and the tokens
// after them are computed over the decoded chunks. A store is never opened
// with another codec.
TEST_P(ReuseTest, ACodecStoreServesWhatItsCodecDecodes) {
  testing::OneIntraOpThread one_thread;  // the reference is one whole pass, the store's KV chunk by chunk
  const int layers = model_->config().num_layers;
  const std::vector<int32_t> ctx = Tokens(70, 5);  // 4 whole 16-token chunks stored
  for (KvCodec codec : {KvCodec::kInt8, KvCodec::kInt4}) {
    SCOPED_TRACE(KvCodecName(codec));
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.kv_codec = codec;
    o.tiers = TiersOver(CacheLevels({}));  // every load reads the disk
    auto store = PrefixStore::Open(*model_, o);
    ASSERT_TRUE(store.ok()) << store.status().message();
    std::unique_ptr<RewindableKv> kv;
    RequestTrace first, second;
    ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, &first).ok());
    auto got = RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, &second);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(second.reused_tokens, 64);
    EXPECT_LE((*got - CodecReference(codec, ctx)).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(second.load.bytes[Tier::kDisk], EncodedPrefixBytes((*store)->geometry(), codec));
    store->reset();
    PrefixStoreOptions other = o;
    other.kv_codec = codec == KvCodec::kInt8 ? KvCodec::kInt4 : KvCodec::kInt8;
    auto refused = PrefixStore::Open(*model_, other);
    ASSERT_FALSE(refused.ok());
    const std::string& m = refused.status().message();
    EXPECT_NE(m.find(std::string("\"codec\":\"") + KvCodecName(codec) + "\""), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("\"codec\":\"") + KvCodecName(other.kv_codec) + "\""), std::string::npos) << m;
  }
}

// Cache levels sit above the backends: a store asked for a level of the
// disk's tier is refused before it opens (or creates) anything.
TEST_P(ReuseTest, ACacheLevelNotAboveTheDiskIsRefused) {
  TempDir dir;
  PrefixStoreOptions o = Options(dir.path());
  std::vector<CacheLevel> levels = CacheLevels({});
  levels[1].tier = Tier::kDisk;
  o.tiers = TiersOver(levels);
  auto refused = PrefixStore::Open(*model_, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "cache level 'disk' is not above the disk");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Under a codec the CPU tier holds chunks as the disk does, encoded: a tier
// sized for the encoded chunks (too small for them decoded) holds all of
// them and serves what the disk would; with a GPU tier over it, chunks
// promoted (decoded) and demoted (their bytes moved, not re-encoded) still
// give the same answer, and none is dropped.
TEST_P(ReuseTest, TheCpuTierHoldsEncodedChunks) {
  testing::OneIntraOpThread one_thread;  // the reference is one whole pass, the store's KV chunk by chunk
  const int layers = model_->config().num_layers;
  const std::vector<int32_t> ctx = Tokens(70, 5);  // 4 whole 16-token chunks stored
  for (KvCodec codec : {KvCodec::kInt8, KvCodec::kInt4}) {
    SCOPED_TRACE(KvCodecName(codec));
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.kv_codec = codec;
    o.tiers = TiersOver(CacheLevels({}));
    ChunkGeometry g = (*PrefixStore::Open(*model_, o))->geometry();
    const int64_t encoded = EncodedPrefixBytes(g, codec);
    const int64_t decoded = layers * 4 * static_cast<int64_t>(2 * g.KvBytes());
    ASSERT_LT(encoded, decoded / 3 * 2);
    const at::Tensor want = CodecReference(codec, ctx);  // as the disk serves the stored chunks
    for (int64_t gpu : {int64_t{0}, static_cast<int64_t>(4 * 2 * g.KvBytes())}) {
      SCOPED_TRACE(gpu);
      TempDir d2;
      PrefixStoreOptions c = o;
      c.dir = d2.path();
      c.tiers = TiersOver(CacheLevels(TierCountsOf({{Tier::kGpu, gpu}, {Tier::kCpu, encoded}})));
      auto store = PrefixStore::Open(*model_, c);
      ASSERT_TRUE(store.ok()) << store.status().message();
      std::unique_ptr<RewindableKv> kv;
      RequestTrace first, second, third;
      ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, &first).ok());
      TieredCache& cache = PrefixStoreTestPeer::cache(**store);
      if (gpu == 0) EXPECT_EQ(cache.used(Tier::kCpu), encoded);  // every chunk, encoded
      for (RequestTrace* t : {&second, &third}) {
        auto got = RunRequest(Named("as"), *model_, store->get(), ctx, 64, &kv, t);
        ASSERT_TRUE(got.ok()) << got.status().message();
        EXPECT_EQ(t->reused_tokens, 64);
        EXPECT_EQ(t->load.bytes[Tier::kDisk], 0);  // nothing from the disk
        EXPECT_LE((*got - want).abs().max().item<double>(), 1e-4);
      }
      if (gpu == 0) EXPECT_EQ(second.load.bytes[Tier::kCpu], encoded);  // the CPU tier serves the encoded bytes
      EXPECT_EQ(cache.entries(Tier::kGpu) + cache.entries(Tier::kCpu), static_cast<size_t>(4 * layers));
      EXPECT_LE(cache.used(Tier::kCpu), encoded);
    }
  }
}

// Selective loading from the store: retention 1.0 under h2o and impress-itf
// gives the as result exactly; H2O reads no more than as; IMPRESS that never
// trusts its probe heads (alpha = 0) reads exactly H2O's bytes plus the probe
// keys, and runs one probe test per layer.
TEST_P(ReuseTest, SelectiveLoadingFromTheStore) {
  auto run = [&](const System& sys, RequestTrace* t) { return OnStoredPrefix(sys, t); };
  RequestTrace as_t, h1_t, i1_t, h_t, i_t;
  at::Tensor as = run(Named("as"), &as_t);
  EXPECT_TRUE(run(Named("h2o-lru", 1.0), &h1_t).equal(as));
  EXPECT_TRUE(run(Named("impress-itf", 1.0), &i1_t).equal(as));
  at::Tensor h2o = run(Named("h2o-lfu", 0.1), &h_t);
  at::Tensor itf = run(Itf().never, &i_t);
  EXPECT_LE(h_t.load.bytes[Tier::kDisk], as_t.load.bytes[Tier::kDisk]);
  EXPECT_TRUE(itf.equal(h2o));
  const int64_t layers = model_->config().num_layers;
  TempDir probe_dir;
  auto geometry = (*PrefixStore::Open(*model_, Options(probe_dir.path())))->geometry();
  EXPECT_EQ(i_t.load.bytes[Tier::kDisk], h_t.load.bytes[Tier::kDisk] + 10 * layers * static_cast<int64_t>(geometry.ProbeBytes()));
  int64_t probes = 0, fallbacks = 0;
  for (int l = 0; l < layers; ++l) probes += i_t.selection.probes[l], fallbacks += i_t.selection.fallbacks[l];
  EXPECT_EQ(probes, layers);
  EXPECT_EQ(fallbacks, layers);
  // The chunk unit, always trusted (a huge alpha puts t near 0): every layer
  // reads the probe keys of all 10 chunks and keys and values of exactly
  // ceil(k / C) = 2 chunks (k = 26 of 160 tokens), and attends to k tokens.
  System chunked = Named("impress-itf", 0.16);
  chunked.select.alpha = 1000;
  chunked.select.unit = ItfUnit::kChunk;
  RequestTrace c_t;
  at::Tensor by_chunk = run(chunked, &c_t);
  for (int l = 0; l < layers; ++l) {
    ASSERT_EQ(c_t.selection.fallbacks[l], 0) << "layer " << l;
    EXPECT_EQ(c_t.selection.kept[l], 26) << "layer " << l;
    EXPECT_EQ(c_t.layer_kv_chunks[l], 2) << "layer " << l;
  }
  EXPECT_EQ(c_t.load.bytes[Tier::kDisk], layers * static_cast<int64_t>(10 * geometry.ProbeBytes() + 2 * 2 * geometry.KeyBytes()));
  EXPECT_FALSE(by_chunk.equal(as));
}

// Selection time is reported in parts that add up to it: importance (none
// for full reuse), deciding and gathering; the score policy's placement is
// timed apart and only where a policy places on what selections used.
TEST_P(ReuseTest, SelectionTimeIsItsParts) {
  const ItfVariants itf = Itf();
  for (const System& sys : {Named("as"), Named("h2o-lfu", 0.1), itf.never, itf.always, itf.chunked,
                            Named("impress", 0.1)}) {
    RequestTrace t;
    store_policy_ = sys.policy;  // the score policy places on what selections used
    OnStoredPrefix(sys, &t);
    const std::string what = sys.name + " alpha " + std::to_string(sys.select.alpha);
    EXPECT_NEAR(t.select_ms, t.importance_ms + t.decision_ms + t.gather_ms, 1e-6) << what;
    EXPECT_GE(t.decision_ms, -1e-6) << what;
    EXPECT_GT(t.gather_ms, 0) << what;
    if (sys.name == "as") EXPECT_EQ(t.importance_ms, 0) << what;
    else EXPECT_GT(t.importance_ms, 0) << what;
    if (sys.policy == PolicyKind::kScore) EXPECT_GT(t.placement_ms, 0) << what;
    else EXPECT_EQ(t.placement_ms, 0) << what;
  }
}

// Each part is measured on its own clock intervals: time spent after a
// layer's importance step ends (here an observer that sleeps there) is
// deciding's, never importance's.
TEST_P(ReuseTest, TimeAfterTheImportanceStepIsDeciding) {
  static constexpr int kSleepMs = 40;
  struct Sleeper final : SelectionObserver {
    void OnStepEnd(int, SelectStep step) override {
      if (step == SelectStep::kImportance) std::this_thread::sleep_for(std::chrono::milliseconds(kSleepMs));
    }
  } sleeper;
  const ItfVariants itf = Itf();
  const double slept = static_cast<double>(model_->config().num_layers) * kSleepMs;
  for (const System& sys : {Named("h2o-lfu", 0.1), itf.always}) {
    RequestTrace t;
    store_policy_ = sys.policy;
    RequestOptions ro;
    ro.observer = &sleeper;
    OnStoredPrefix(sys, &t, ro);
    EXPECT_GE(t.decision_ms, slept) << sys.name;
    EXPECT_LT(t.importance_ms, slept) << sys.name;  // the importance of 160 tokens, far under a sleep per layer
    EXPECT_NEAR(t.select_ms, t.importance_ms + t.decision_ms + t.gather_ms, 1e-6) << sys.name;
  }
}

// A selection's read-backs to the host, per layer: on CUDA its host
// synchronisations (docs/gpu.md), counted the same way here. None for full
// reuse; one for H2O and for a layer where the probe heads are trusted; two
// where ITF falls back to H2O (its decision, then H2O's ranking).
TEST_P(ReuseTest, HostReadBacksPerLayer) {
  const ItfVariants itf = Itf();
  const size_t layers = static_cast<size_t>(model_->config().num_layers);
  auto expect = [&](const System& sys, const std::function<int64_t(const RequestTrace&, size_t)>& want) {
    RequestTrace t;
    store_policy_ = sys.policy;
    OnStoredPrefix(sys, &t);
    ASSERT_EQ(t.layer_host_syncs.size(), layers) << sys.name;
    for (size_t l = 0; l < layers; ++l)
      EXPECT_EQ(t.layer_host_syncs[l], want(t, l)) << sys.name << " alpha " << sys.select.alpha << " layer " << l;
  };
  expect(Named("as"), [](const RequestTrace&, size_t) { return 0; });
  expect(Named("h2o-lfu", 0.1), [](const RequestTrace&, size_t) { return 1; });
  expect(itf.never, [](const RequestTrace&, size_t) { return 2; });
  expect(itf.always, [](const RequestTrace&, size_t) { return 1; });
  expect(itf.chunked, [](const RequestTrace&, size_t) { return 1; });
  expect(Named("impress", 0.1), [](const RequestTrace& t, size_t l) { return t.selection.fallbacks[l] > 0 ? 2 : 1; });
}

// Selective systems read the next layer's query-independent part (keys for
// H2O, probe keys for ITF) while a layer computes; that changes when bytes
// are read, never which bytes or what attention sees.
TEST_P(ReuseTest, SelectionPrefetchChangesOnlyWhenBytesAreRead) {
  auto run = [&](const System& sys, bool prefetch, RequestTrace* t) {
    return OnStoredPrefix(sys, t, RequestOptions{prefetch});
  };
  const ItfVariants itf = Itf();
  const System systems[] = {Named("h2o-lfu", 0.1), Named("h2o-lru", 1.0), Named("impress-itf", 1.0), itf.never,
                            itf.always, itf.chunked};
  for (const System& sys : systems) {
    SCOPED_TRACE(sys.name + " retention " + std::to_string(sys.select.retention) + " alpha " +
                 std::to_string(sys.select.alpha));
    RequestTrace on, off;
    at::Tensor with = run(sys, true, &on), without = run(sys, false, &off);
    ExpectSameSelection(with, on, without, off);
    EXPECT_GT(on.load.bytes[Tier::kDisk], 0);
    EXPECT_EQ(on.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk]);
  }
}

// Speculation (ITF) reads the K and V of the chunks holding the last trusted
// layer's agreed tokens ahead with the probe keys: attention sees the same
// KV, the selection the same sets, and on a store that reads everything from
// disk the bytes differ by exactly the guess's cost: a guessed chunk reads K
// and V instead of its probe keys, and then nothing more if it was needed.
TEST_P(ReuseTest, SpeculationChangesOnlyWhichBytesAreReadAhead) {
  TempDir dir;
  auto geometry = (*PrefixStore::Open(*model_, Options(dir.path())))->geometry();
  const int64_t kb = static_cast<int64_t>(geometry.KeyBytes()), pb = static_cast<int64_t>(geometry.ProbeBytes());
  const ItfVariants itf = Itf();
  const System systems[] = {itf.always, itf.chunked, itf.never, Named("impress-itf", 1.0), Named("h2o-lfu", 0.1)};
  for (const System& sys : systems) {
    SCOPED_TRACE(sys.name + " retention " + std::to_string(sys.select.retention) + " alpha " +
                 std::to_string(sys.select.alpha));
    RequestTrace on, off;
    at::Tensor with = OnStoredPrefix(sys, &on, RequestOptions{true, Speculation::kAnywhere});
    at::Tensor without = OnStoredPrefix(sys, &off, RequestOptions{true, Speculation::kOff});
    ExpectSameSelection(with, on, without, off);
    EXPECT_EQ(off.speculated_chunks, 0);
    EXPECT_LE(on.speculated_used, on.speculated_chunks);
    const bool trusts = sys.select.kind == SelectorKind::kItf && sys.select.alpha > 1 && sys.select.retention < 1;
    if (!trusts) {  // nothing agreed, or nothing to guess: the same reads
      EXPECT_EQ(on.speculated_chunks, 0);
      EXPECT_EQ(on.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk]);
      continue;
    }
    // Every layer after the first guesses from the one before.
    EXPECT_GE(on.speculated_chunks, model_->config().num_layers - 1);
    // In a trained model adjacent layers attend alike: most guesses are needed.
    if (GetParam() == "smollm2") EXPECT_GE(2 * on.speculated_used, on.speculated_chunks);
    const int64_t spec = on.speculated_chunks, used = on.speculated_used;
    EXPECT_EQ(on.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk] + (spec - used) * 2 * kb - spec * pb);
  }
}

// The digest system reads nothing ahead; with speculation it reads layer
// l+1's guess, the K and V of the chunks layer l gathered: the same
// selections and attention, and the bytes differ by the unneeded guesses.
TEST_P(ReuseTest, DigestSpeculationChangesOnlyWhichBytesAreReadAhead) {
  TempDir dir;
  const int64_t kb = static_cast<int64_t>((*PrefixStore::Open(*model_, Options(dir.path())))->geometry().KeyBytes());
  store_digests_ = true;
  const System sys = Named("digest", 0.25);
  RequestTrace on, off;
  at::Tensor with = OnStoredPrefix(sys, &on, RequestOptions{true, Speculation::kAnywhere});
  at::Tensor without = OnStoredPrefix(sys, &off, RequestOptions{true, Speculation::kOff});
  ExpectSameSelection(with, on, without, off);
  EXPECT_EQ(off.speculated_chunks, 0);
  EXPECT_GE(on.speculated_chunks, model_->config().num_layers - 1);  // every layer after the first guesses
  EXPECT_LE(on.speculated_used, on.speculated_chunks);
  EXPECT_EQ(on.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk] + (on.speculated_chunks - on.speculated_used) * 2 * kb);
}

// RequestOptions::read_ahead r starts the reads of layers l+1 .. l+r after
// layer l's selection: the same selections, attention and (without a guess)
// bytes; with a guess, layer l's is the set of layer max(0, l - r), read as
// that layer read it (Speculation::kAnywhere takes as many chunks).
TEST_P(ReuseTest, ReadAheadDepthChangesOnlyWhenBytesAreRead) {
  store_digests_ = true;
  const ItfVariants itf = Itf();
  const int layers = model_->config().num_layers;
  for (const System& sys : {Named("as"), Named("h2o-lfu", 0.1), Named("digest", 0.25), itf.always}) {
    const bool guesses = sys.select.kind == SelectorKind::kDigest || sys.select.kind == SelectorKind::kItf;
    const Speculation how = guesses ? Speculation::kAnywhere : Speculation::kOff;
    RequestTrace one;
    at::Tensor base = OnStoredPrefix(sys, &one, RequestOptions{true, how, 1});
    for (int r : {2, 3}) {
      SCOPED_TRACE(sys.name + " read ahead " + std::to_string(r));
      RequestTrace deep;
      at::Tensor got = OnStoredPrefix(sys, &deep, RequestOptions{true, how, r});
      ExpectSameSelection(got, deep, base, one);
      if (!guesses) {
        EXPECT_EQ(deep.load.bytes[Tier::kDisk], one.load.bytes[Tier::kDisk]);
        continue;
      }
      ASSERT_EQ(deep.layer_kv_chunks.size(), static_cast<size_t>(layers));
      for (const auto& [trace, depth] : {std::pair<const RequestTrace*, int>{&one, 1}, {&deep, r}}) {
        int64_t guessed = 0;  // each layer's guess: the chunks its guessing layer read
        for (int l = 1; l < layers; ++l) guessed += trace->layer_kv_chunks[static_cast<size_t>(std::max(0, l - depth))];
        EXPECT_EQ(trace->speculated_chunks, guessed) << "depth " << depth;
      }
    }
  }
}

// With Speculation::kCached the guess takes only chunks a cache level holds:
// after a request with another question, the measured request reads from
// disk exactly what it reads without a guess, guessing only cached chunks,
// while kAnywhere's guess reads more from disk. Selections and attention are
// the same in all three.
TEST_P(ReuseTest, DigestSpeculationFromTheCachesReadsNothingBelowThem) {
  RequestTrace off, cached, anywhere;
  at::Tensor without = OnReopenedStore(Speculation::kOff, Warm::kOtherQuestion, &off);
  at::Tensor from_caches = OnReopenedStore(Speculation::kCached, Warm::kOtherQuestion, &cached);
  at::Tensor guessing = OnReopenedStore(Speculation::kAnywhere, Warm::kOtherQuestion, &anywhere);
  ExpectSameAttention(from_caches, cached, without, off);
  ExpectSameAttention(guessing, anywhere, without, off);
  EXPECT_GT(off.load.bytes[Tier::kDisk], 0);  // the other question chose other chunks
  EXPECT_EQ(cached.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk]);
  EXPECT_EQ(cached.load.read[Tier::kDisk], off.load.read[Tier::kDisk]);
  EXPECT_GT(cached.speculated_chunks, 0);
  EXPECT_LT(cached.speculated_chunks, anywhere.speculated_chunks);  // some guessed chunks were not cached
  EXPECT_GT(anywhere.load.bytes[Tier::kDisk], off.load.bytes[Tier::kDisk]);
}

// kAdaptive guesses as kCached where the caches hold the guess (warmed with
// every chunk: nothing from disk) and as kAnywhere where they hold none of it
// (cold caches: every layer's guess names chunks of a layer not read yet).
TEST_P(ReuseTest, AdaptiveSpeculationReadsTheWholeGuessOnlyWhereTheCachesAreCold) {
  RequestTrace off, cold_cached, cold_anywhere, cold_adaptive, warm_off, warm_cached, warm_adaptive;
  at::Tensor without = OnReopenedStore(Speculation::kOff, Warm::kNone, &off);
  OnReopenedStore(Speculation::kCached, Warm::kNone, &cold_cached);
  OnReopenedStore(Speculation::kAnywhere, Warm::kNone, &cold_anywhere);
  at::Tensor cold = OnReopenedStore(Speculation::kAdaptive, Warm::kNone, &cold_adaptive);
  ExpectSameAttention(cold, cold_adaptive, without, off);
  EXPECT_EQ(cold_cached.speculated_chunks, 0);
  EXPECT_GE(cold_adaptive.speculated_chunks, model_->config().num_layers - 1);
  EXPECT_EQ(cold_adaptive.speculated_chunks, cold_anywhere.speculated_chunks);
  EXPECT_EQ(cold_adaptive.load.bytes[Tier::kDisk], cold_anywhere.load.bytes[Tier::kDisk]);
  OnReopenedStore(Speculation::kOff, Warm::kEveryChunk, &warm_off);
  OnReopenedStore(Speculation::kCached, Warm::kEveryChunk, &warm_cached);
  at::Tensor warm = OnReopenedStore(Speculation::kAdaptive, Warm::kEveryChunk, &warm_adaptive);
  ExpectSameAttention(warm, warm_adaptive, without, off);
  EXPECT_GT(warm_adaptive.speculated_chunks, 0);
  EXPECT_EQ(warm_adaptive.speculated_chunks, warm_cached.speculated_chunks);
  EXPECT_EQ(warm_off.load.bytes[Tier::kDisk], 0);
  EXPECT_EQ(warm_adaptive.load.bytes[Tier::kDisk], 0);
}

// The spread probe layout from the store: the store copies the keys of the
// KV heads the probe heads use, an untrusted probe reads just those on top of
// H2O's reads and answers as H2O does, a trusted one reads no other keys, and
// a store copying fewer KV heads is refused.
TEST_P(ReuseTest, SpreadProbesReadTheKvHeadsTheyUse) {
  const ModelConfig& c = model_->config();
  const int64_t need = ProbeKvHeads(ProbeQueryHeads(3, c.num_heads, c.num_kv_heads, ProbeLayout::kSpread),
                                    c.num_heads, c.num_kv_heads);
  std::vector<int32_t> prefix = Tokens(160, 4);
  std::vector<int32_t> ctx = prefix;
  for (int32_t t : Tokens(12, 77)) ctx.push_back(t);
  std::unique_ptr<RewindableKv> kv;
  auto run = [&](const System& sys, ProbeLayout store_layout, RequestTrace* t) -> StatusOr<at::Tensor> {
    TempDir dir;
    PrefixStoreOptions o = Options(dir.path());
    o.tiers = TiersOver(CacheLevels({}));  // every load reads the disk
    o.probe_layout = store_layout;
    auto store = PrefixStore::Open(*model_, o);
    EXPECT_EQ((*store)->geometry().probe_kv_heads,
              store_layout == ProbeLayout::kSpread ? need : ProbeKvHeads({0, 1, 2}, c.num_heads, c.num_kv_heads));
    RequestTrace warm;
    EXPECT_TRUE(RunRequest(Named("as"), *model_, store->get(), prefix, 160, &kv, &warm).ok());
    return RunRequest(sys, *model_, store->get(), ctx, 160, &kv, t);
  };
  System never = Itf().never, always = Itf().always;
  never.select.probe_layout = always.select.probe_layout = ProbeLayout::kSpread;
  RequestTrace h_t, n_t, a_t;
  auto h2o = run(Named("h2o-lfu", 0.1), ProbeLayout::kSpread, &h_t);
  auto fallback = run(never, ProbeLayout::kSpread, &n_t);
  ASSERT_TRUE(h2o.ok() && fallback.ok()) << fallback.status().message();
  EXPECT_TRUE(fallback->equal(*h2o));
  const int64_t layers = c.num_layers, probe_bytes = need * 16 * c.head_dim * 2;  // 16-token chunks, fp16 (unpadded)
  EXPECT_EQ(n_t.load.bytes[Tier::kDisk], h_t.load.bytes[Tier::kDisk] + 10 * layers * probe_bytes);
  auto trusted = run(always, ProbeLayout::kSpread, &a_t);
  ASSERT_TRUE(trusted.ok()) << trusted.status().message();
  for (int l = 0; l < layers; ++l) EXPECT_EQ(a_t.selection.fallbacks[l], 0) << "layer " << l;
  // Trusted: the probe copy of every chunk, then keys and values of the chunks holding agreed tokens.
  const int64_t key_bytes = 16 * c.num_kv_heads * c.head_dim * 2;
  int64_t want = 10 * layers * probe_bytes;
  for (int l = 0; l < layers; ++l) want += a_t.layer_kv_chunks[l] * 2 * key_bytes;
  EXPECT_EQ(a_t.load.bytes[Tier::kDisk], want);
  if (need > ProbeKvHeads({0, 1, 2}, c.num_heads, c.num_kv_heads)) {
    RequestTrace r_t;
    auto refused = run(always, ProbeLayout::kFirst, &r_t);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("probe layout needs " + std::to_string(need)), std::string::npos)
        << refused.status().message();
  }
}

TEST_P(ReuseTest, OtherModelStoreIsRefused) {
  TempDir dir;
  PrefixStoreOptions o = Options(dir.path());
  ASSERT_TRUE(PrefixStore::Open(*model_, o).ok());
  o.chunk_tokens = 32;
  auto s = PrefixStore::Open(*model_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("store was written for"), std::string::npos);
}

// A store opened without chunk digests holds a prefix; the digest system is
// refused on it with one line naming the store, before anything is read,
// and a store that keeps digests serves it.
TEST_P(ReuseTest, AStoreWithoutDigestsIsRefusedToTheDigestSystemByName) {
  TempDir dir;
  auto store = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::vector<int32_t> prefix = Tokens(128, 4);
  std::vector<int32_t> ctx = prefix;
  for (int32_t tok : Tokens(12, 77)) ctx.push_back(tok);
  std::unique_ptr<RewindableKv> kv;
  RequestTrace fill, t;
  ASSERT_TRUE(RunRequest(Named("as"), *model_, store->get(), prefix, 128, &kv, &fill).ok());
  auto r = RunRequest(Named("digest", 0.25), *model_, store->get(), ctx, 128, &kv, &t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.path() + ": the store keeps no chunk digests; digest scores chunks from them "
                                               "(a store opened for it keeps them)");
  EXPECT_EQ(t.load.chunks, 0);
  store_digests_ = true;
  RequestTrace served;
  EXPECT_TRUE(OnStoredPrefix(Named("digest", 0.25), &served).defined());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReuseTest, ::testing::Values("tiny-llama-gqa", "tiny-opt-postln-proj", "smollm2"),
                         testing::ParamName);

}  // namespace
}  // namespace impress
