// The CUDA data path (kvstore/load_stream.h, docs/gpu.md) against the CPU
// path: every system, with read-ahead on and off, over a store whose caches
// are a few chunks each, so that chunks are read from disk into pinned memory,
// copied up into the GPU tier, demoted into the CPU tier and promoted again,
// and the store is reopened between filling and reading. On the GPU each
// system's log-probabilities equal the CPU's, it reads the same chunks from
// the same tiers, and `as` equals recomputation. Nothing here depends on
// thread timing. On a machine without a CUDA device every test skips, saying
// so; IMPRESS_CUDA_TEST_DEVICE=cpu runs the same comparison CPU against CPU
// (the rehearsal of the test itself); scripts/gpu/gpu_check.sh runs it on a GPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>

#include "request/request.h"
#include "request/systems.h"
#include "model/model.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

// The device compared with the CPU: CUDA, or the CPU itself in a rehearsal.
std::string OtherDevice() {
  const char* d = std::getenv("IMPRESS_CUDA_TEST_DEVICE");
  if (d != nullptr && std::string(d) == "cpu") return "cpu";
  return at::hasCUDA() ? "cuda" : "";
}

class CudaPath : public ::testing::TestWithParam<std::string> {
 protected:
  static constexpr int kPrefix = 160, kChunk = 16;

  void SetUp() override {
    const std::string other = OtherDevice();
    if (other.empty()) GTEST_SKIP() << "no CUDA device here: the CUDA data path runs on a GPU (scripts/gpu/gpu_check.sh)";
    auto manifest = testing::FixtureManifest();
    if (!manifest["models"].contains(GetParam())) IMPRESS_MISSING_FIXTURE("fixture model " << GetParam());
    for (const std::string device : {std::string("cpu"), other}) {
      auto m = LoadModel(manifest["models"][GetParam()], LoadOptions{device, "float32"});
      ASSERT_TRUE(m.ok()) << m.status().message();
      models_.push_back(std::move(*m));
    }
  }
  // The store keeps fp32 KV, so both devices read the same exact values. The
  // GPU tier holds 3 (chunk, layer) entries and the CPU tier 6, of the
  // prefix's 10 chunks x layers: nearly every read evicts, demotes or promotes.
  // With a KV codec the store keeps fp16 (what the codecs encode), read on
  // CUDA as encoded bytes decoded on the device, on the CPU decoded on the host.
  // For a system that scores chunk digests the store keeps them, in its codec.
  PrefixStoreOptions Options(const std::string& dir, const System& system, KvCodec codec) const {
    const ModelConfig& c = models_[0]->config();
    const int64_t entry = 2LL * kChunk * c.num_kv_heads * c.head_dim * (codec == KvCodec::kNone ? 4 : 2);
    PrefixStoreOptions o;
    o.dir = dir;
    o.chunk_tokens = kChunk;
    o.kv_dtype = codec == KvCodec::kNone ? "float32" : "float16";
    o.kv_codec = codec;
    o.tiers = TiersOver(CacheLevels(TierCountsOf({{Tier::kGpu, 3 * entry}, {Tier::kCpu, 6 * entry}})));
    o.policy = system.policy;
    if (system.reads_digests) o.digests = system.select.digest.codec;
    return o;
  }
  std::vector<int32_t> Tokens(int n, int seed) const {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = (i * 7919 + seed * 104729 + 13) % models_[0]->config().vocab_size;
    return t;
  }
  std::vector<int32_t> Context(int q) const {
    std::vector<int32_t> ctx = Tokens(kPrefix, 1);
    for (int32_t t : Tokens(12, 40 + q)) ctx.push_back(t);
    return ctx;
  }
  // What one request of a run showed.
  struct Seen {
    at::Tensor logprobs;  // host
    RequestTrace trace;
  };
  // On device d: `as` stores the prefix; the store is reopened (caches
  // cold); then `system` serves three requests over it (disk, then the tiers).
  std::vector<Seen> Run(int d, const System& system, bool prefetch, KvCodec codec = KvCodec::kNone) {
    TempDir dir;
    std::vector<Seen> seen;
    {
      auto store = PrefixStore::Open(*models_[d], Options(dir.path(), system, codec));
      EXPECT_TRUE(store.ok()) << store.status().message();
      if (!store.ok()) return seen;
      RequestTrace t;
      std::unique_ptr<RewindableKv> kv;
      EXPECT_TRUE(RunRequest(*ParseSystem("as", 1.0, 0.6), *models_[d], store->get(), Context(0), kPrefix, &kv, &t).ok());
      EXPECT_GT(t.stored_chunks, 0);
    }
    auto store = PrefixStore::Open(*models_[d], Options(dir.path(), system, codec));
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return seen;
    for (int q = 1; q <= 3; ++q) {
      Seen s;
      std::unique_ptr<RewindableKv> kv;
      auto r = RunRequest(system, *models_[d], store->get(), Context(q), kPrefix, &kv, &s.trace,
                          RequestOptions{prefetch, Speculation::kOff});
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return seen;
      s.logprobs = r->cpu();
      seen.push_back(std::move(s));
    }
    return seen;
  }
  // `system` on both devices: the same chunks from the same tiers, the same answers.
  void ExpectSameAsTheCpu(const System& system, bool prefetch, KvCodec codec) {
    const std::vector<Seen> cpu = Run(0, system, prefetch, codec), dev = Run(1, system, prefetch, codec);
    ASSERT_EQ(cpu.size(), 3u);
    ASSERT_EQ(dev.size(), 3u);
    TierCounts tiers;
    for (size_t q = 0; q < cpu.size(); ++q) {
      const RequestTrace &a = cpu[q].trace, &b = dev[q].trace;
      EXPECT_LE((dev[q].logprobs - cpu[q].logprobs).abs().max().item<double>(), 1e-4) << "request " << q;
      EXPECT_EQ(b.reused_tokens, a.reused_tokens) << "request " << q;
      EXPECT_FALSE(b.recomputed_after_error) << b.error;
      EXPECT_EQ(b.layer_kv_chunks, a.layer_kv_chunks) << "request " << q << ": the chunks whose K/V were read";
      EXPECT_EQ(b.selection.kept, a.selection.kept) << "request " << q;
      EXPECT_EQ(b.selection.fallbacks, a.selection.fallbacks) << "request " << q;
      EXPECT_EQ(b.layer_host_syncs, a.layer_host_syncs) << "request " << q;
      for (Tier t : {Tier::kGpu, Tier::kCpu, Tier::kDisk})
        EXPECT_EQ(b.load.bytes[t], a.load.bytes[t]) << "request " << q << ", tier " << static_cast<int>(t);
      tiers += b.load.bytes;
    }
    if (system.reuse) {  // the run went through every tier
      EXPECT_GT(tiers[Tier::kDisk], 0);
      EXPECT_GT(tiers[Tier::kGpu], 0);
      EXPECT_GT(tiers[Tier::kCpu], 0) << "nothing demoted into the CPU tier was read back";
    }
  }
  std::vector<std::unique_ptr<Model>> models_;  // [0] the CPU, [1] CUDA (or the CPU in a rehearsal)
};

TEST_P(CudaPath, EverySystemReadsTheSameChunksFromTheSameTiersAndComputesTheSame) {
  for (const std::string& name : SystemNames())
    for (bool prefetch : {true, false}) {
      SCOPED_TRACE(name + (prefetch ? "" : " without read-ahead"));
      auto system = ParseSystem(name, 0.25, 0.6);
      ASSERT_TRUE(system.ok());
      if (!system->served_from_store) continue;
      ExpectSameAsTheCpu(*system, prefetch, KvCodec::kNone);
    }
}

// Under a KV codec the CPU tier holds encoded chunks; on CUDA a chunk's
// encoded bytes go up and are decoded on the device (bit-identical to the
// host's decoder), on the CPU decoded on the host.
TEST_P(CudaPath, CodecStoresDecodeOnTheDeviceAsOnTheCpu) {
  for (KvCodec codec : {KvCodec::kInt8, KvCodec::kInt4})
    for (const char* name : {"as", "h2o-lfu", "impress"}) {
      SCOPED_TRACE(std::string(name) + " " + KvCodecName(codec));
      ExpectSameAsTheCpu(*ParseSystem(name, 0.25, 0.6), /*prefetch=*/true, codec);
    }
}

TEST_P(CudaPath, FullReuseEqualsRecomputation) {
  const std::vector<Seen> as = Run(1, *ParseSystem("as", 1.0, 0.6), true);
  const std::vector<Seen> recomp = Run(1, *ParseSystem("recomp", 1.0, 0.6), true);
  ASSERT_EQ(as.size(), 3u);
  ASSERT_EQ(recomp.size(), 3u);
  for (size_t q = 0; q < as.size(); ++q) {
    EXPECT_EQ(as[q].trace.reused_tokens, kPrefix) << "request " << q;
    EXPECT_LE((as[q].logprobs - recomp[q].logprobs).abs().max().item<double>(), 1e-4) << "request " << q;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaPath, ::testing::Values("tiny-llama-gqa", "smollm2"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace impress
