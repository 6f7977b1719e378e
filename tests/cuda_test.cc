// The CUDA data path (engine/load_stream.h): on a GPU, every system's logits
// equal the CPU's with read-ahead on and off, and layer l+1's read-ahead is
// on the load stream before layer l's compute ends. On a machine without a
// CUDA device every test skips, saying so; scripts/gpu_check.sh runs them on one.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/request.h"
#include "engine/systems.h"
#include "model/model.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

class CudaPath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device here: the CUDA data path runs on a GPU (scripts/gpu_check.sh)";
    auto manifest = testing::FixtureManifest();
    if (!manifest["models"].contains(GetParam())) GTEST_SKIP() << GetParam() << " not made here";
    for (const char* device : {"cpu", "cuda"}) {
      auto m = LoadModel(manifest["models"][GetParam()], LoadOptions{device, "float32"});
      ASSERT_TRUE(m.ok()) << m.status().message();
      models_.push_back(std::move(*m));
    }
  }
  // The store keeps fp32 KV, so both devices read the same exact values.
  PrefixStoreOptions Options(const std::string& dir, PolicyKind policy) {
    PrefixStoreOptions o;
    o.dir = dir;
    o.chunk_tokens = 16;
    o.kv_dtype = "float32";
    o.tiers.levels = GpuCpuLevels(64 << 10, 128 << 10);
    o.tiers.policy = policy;
    return o;
  }
  std::vector<int32_t> Tokens(int n, int seed) const {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = (i * 7919 + seed * 104729 + 13) % models_[0]->config().vocab_size;
    return t;
  }
  // `system` over a stored 160-token prefix on device d, three requests
  // (stored, then reused twice, so caches fill and serve); the last log-probs.
  at::Tensor Run(int d, const System& system, bool prefetch, RequestTrace* last) {
    TempDir dir;
    auto store = PrefixStore::Open(*models_[d], Options(dir.path(), system.policy));
    EXPECT_TRUE(store.ok()) << store.status().message();
    const std::vector<int32_t> prefix = Tokens(160, 1);
    at::Tensor out;
    for (int q = 0; q < 3; ++q) {
      std::vector<int32_t> ctx = prefix;
      for (int32_t t : Tokens(12, 40 + q)) ctx.push_back(t);
      RequestTrace trace;
      std::unique_ptr<RewindableKv> kv;
      auto r = RunRequest(system, *models_[d], store->get(), ctx, 160, &kv, &trace, RequestOptions{prefetch, false});
      EXPECT_TRUE(r.ok()) << r.status().message();
      out = *r;
      *last = trace;
    }
    return out;
  }
  std::vector<std::unique_ptr<Model>> models_;  // [0] CPU, [1] CUDA
};

TEST_P(CudaPath, EverySystemMatchesTheCpu) {
  for (const std::string& name : SystemNames()) {
    for (bool prefetch : {true, false}) {
      auto system = ParseSystem(name, 0.25, 0.6);
      ASSERT_TRUE(system.ok());
      RequestTrace cpu, cuda;
      const at::Tensor want = Run(0, *system, prefetch, &cpu);
      const at::Tensor got = Run(1, *system, prefetch, &cuda);
      EXPECT_LE((got.cpu() - want).abs().max().item<double>(), 1e-4) << name << (prefetch ? "" : " without read-ahead");
      EXPECT_EQ(cuda.reused_tokens, cpu.reused_tokens) << name;
      EXPECT_EQ(cuda.load.bytes.Total(), cpu.load.bytes.Total()) << name << ": the same bytes from the tiers";
    }
  }
}

TEST_P(CudaPath, NextLayersReadIsOnTheLoadStreamBeforeThisLayerEnds) {
  for (const char* name : {"as", "impress-itf"}) {
    RequestTrace t;
    Run(1, *ParseSystem(name, 0.25, 0.6), /*prefetch=*/true, &t);
    const auto& d = t.device_layers;
    ASSERT_EQ(d.size(), static_cast<size_t>(models_[1]->config().num_layers)) << name;
    for (size_t l = 0; l + 1 < d.size(); ++l) {
      EXPECT_GT(d[l + 1].load_end, d[l + 1].load_begin) << name << " layer " << l + 1 << ": no device work on the load stream";
      EXPECT_LT(d[l + 1].load_begin, d[l].compute_end) << name << " layer " << l + 1 << "'s read began after layer " << l << " ended";
    }
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
