// Requests through the tiers: full reuse (as) equals recomputation at the
// stored precision, a reopened store serves what was committed, and a corrupt
// chunk is recomputed rather than served.
#include "engine/request.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "model/model.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

class ReuseTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto manifest = testing::FixtureManifest();
    if (!manifest["models"].contains(GetParam())) GTEST_SKIP() << GetParam() << " not made here";
    auto m = LoadModel(manifest["models"][GetParam()], LoadOptions{testing::TestDevice(), "float32"});
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
  }
  PrefixStoreOptions Options(const std::string& dir) {
    PrefixStoreOptions o;
    o.dir = dir;
    o.chunk_tokens = 16;
    o.tiers.gpu_bytes = 64 << 10;
    o.tiers.cpu_bytes = 128 << 10;
    return o;
  }
  std::vector<int32_t> Tokens(int n, int seed) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = (i * 7919 + seed * 104729 + 13) % model_->config().vocab_size;
    return t;
  }
  std::unique_ptr<Model> model_;
};

TEST_P(ReuseTest, FullReuseEqualsRecompute) {
  TempDir dir;
  auto store = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::vector<int32_t> prefix = Tokens(100, 1);  // 6 whole chunks + 4 tokens
  DenseKvCache kv(model_->config().num_layers);
  for (int q = 0; q < 3; ++q) {
    std::vector<int32_t> ctx = prefix;
    for (int32_t t : Tokens(9 + q, 50 + q)) ctx.push_back(t);
    RequestTrace rt, at;
    auto want = RunRequest(System::kRecomp, *model_, store->get(), ctx, 100, kv, &rt);
    auto got = RunRequest(System::kAs, *model_, store->get(), ctx, 100, kv, &at);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(kv.size(), static_cast<int64_t>(ctx.size()));
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
  DenseKvCache kv(model_->config().num_layers);
  {
    auto store = PrefixStore::Open(*model_, Options(dir.path()));
    RequestTrace t;
    ASSERT_TRUE(RunRequest(System::kAs, *model_, store->get(), ctx, 64, kv, &t).ok());
    EXPECT_EQ(t.stored_chunks, 4);
  }
  auto store = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ((*store)->tree().chunk_count(), 4u);
  RequestTrace t;
  ASSERT_TRUE(RunRequest(System::kAs, *model_, store->get(), ctx, 64, kv, &t).ok());
  EXPECT_EQ(t.reused_tokens, 64);
  EXPECT_EQ(t.load.bytes[2], 4 * model_->config().num_layers * (*store)->chunk_kv_bytes());  // all from disk
}

TEST_P(ReuseTest, CorruptChunkIsRecomputedNotServed) {
  TempDir dir;
  std::vector<int32_t> ctx = Tokens(40, 3);
  DenseKvCache kv(model_->config().num_layers);
  {
    auto store = PrefixStore::Open(*model_, Options(dir.path()));
    RequestTrace t;
    ASSERT_TRUE(RunRequest(System::kAs, *model_, store->get(), ctx, 32, kv, &t).ok());
  }
  {
    std::fstream f(dir.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x7f');
  }
  auto store = PrefixStore::Open(*model_, Options(dir.path()));  // caches start empty: reads hit the disk
  RequestTrace rt, at;
  auto want = RunRequest(System::kRecomp, *model_, nullptr, ctx, 32, kv, &rt);
  auto got = RunRequest(System::kAs, *model_, store->get(), ctx, 32, kv, &at);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(at.recomputed_after_error);
  EXPECT_NE(at.error.find("fails its checksum"), std::string::npos) << at.error;
  EXPECT_LE((*got - *want).abs().max().item<double>(), 1e-4);
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

INSTANTIATE_TEST_SUITE_P(Fixtures, ReuseTest, ::testing::Values("tiny-llama-gqa", "tiny-opt-postln-proj", "smollm2"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace impress
