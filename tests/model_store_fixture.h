// A test fixture parameterized by a checkpoint of fixtures.json: the model in
// fp32, options for a small prefix store, and seeded token sequences.
#pragma once

#include <ATen/Parallel.h>

#include <memory>
#include <string>
#include <vector>

#include "kvstore/prefix_store.h"
#include "model/model.h"
#include "test_util.h"

namespace impress::testing {

// Runs the scope on one intra-op thread: for comparisons of two paths whose
// rounding depends on how threads split the reductions, so that they hold
// whatever OMP_NUM_THREADS says.
class OneIntraOpThread {
 public:
  OneIntraOpThread() : before_(at::get_num_threads()) { at::set_num_threads(1); }
  ~OneIntraOpThread() { at::set_num_threads(before_); }

 private:
  int before_;
};

class ModelStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto manifest = FixtureManifest();
    if (!manifest["models"].contains(GetParam())) IMPRESS_MISSING_FIXTURE("fixture model " << GetParam());
    auto m = LoadModel(manifest["models"][GetParam()], LoadOptions{TestDevice(), "float32"});
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
  }
  // 16-token chunks; caches of 64 KiB (GPU) and 128 KiB (CPU).
  PrefixStoreOptions Options(const std::string& dir) {
    PrefixStoreOptions o;
    o.dir = dir;
    o.chunk_tokens = 16;
    o.tiers = TiersOver(CacheLevels(TierCountsOf({{Tier::kGpu, 64 << 10}, {Tier::kCpu, 128 << 10}})));
    return o;
  }
  std::vector<int32_t> Tokens(int n, int seed) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = (i * 7919 + seed * 104729 + 13) % model_->config().vocab_size;
    return t;
  }
  std::unique_ptr<Model> model_;
};

// gtest parameter names: checkpoint names with '-' made '_'.
inline std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) if (c == '-') c = '_';
  return s;
}

}  // namespace impress::testing
