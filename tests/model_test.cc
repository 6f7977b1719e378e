// Forward passes against Hugging Face transformers' outputs (make_fixtures.py
// runs transformers on the same checkpoints on every fresh build).
#include "model/model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model/safetensors.h"
#include "test_util.h"

namespace impress {
namespace {

// Reference tensors of one model: p{i}.ids / rows / logits / argmax / greedy.
struct Reference {
  std::unique_ptr<SafetensorsFile> file;
  bool Has(const std::string& name) const { return file->tensors().count(name) > 0; }
  at::Tensor Get(const std::string& name) const {
    const TensorView& v = file->tensors().at(name);
    auto dtype = v.dtype == DType::kI64 ? at::kLong : at::kFloat;
    return at::from_blob(const_cast<void*>(v.data), v.shape, dtype).clone();
  }
  std::vector<int32_t> Ids(const std::string& name) const {
    at::Tensor t = Get(name);
    return std::vector<int32_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
};

class ModelVsTransformers : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto manifest = testing::FixtureManifest();
    if (!manifest["models"].contains(GetParam())) IMPRESS_MISSING_FIXTURE("fixture model " << GetParam());
    dir_ = manifest["models"][GetParam()];
    auto m = LoadModel(dir_, LoadOptions{testing::TestDevice(), "float32"});
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
    auto f = SafetensorsFile::Open(testing::FixturesDir() + "/reference/" + GetParam() + ".safetensors");
    ASSERT_TRUE(f.ok()) << f.status().message();
    ref_.file = std::move(*f);
  }
  std::string dir_;
  std::unique_ptr<Model> model_;
  Reference ref_;
};

TEST_P(ModelVsTransformers, LogitsMatch) {
  int prompts = 0;
  for (int i = 0; ref_.Has("p" + std::to_string(i) + ".ids"); ++i, ++prompts) {
    const std::string p = "p" + std::to_string(i);
    std::vector<int32_t> ids = ref_.Ids(p + ".ids");
    NoPrefixKv none;
    at::Tensor logits = model_->Forward(ids, 0, none, ForwardOptions{true});
    ASSERT_EQ(logits.size(0), static_cast<int64_t>(ids.size()));
    logits = logits.cpu();
    at::Tensor rows = ref_.Get(p + ".rows");
    double diff = (logits.index_select(0, rows) - ref_.Get(p + ".logits")).abs().max().item<double>();
    EXPECT_LE(diff, 1e-3) << p << " (" << ids.size() << " tokens): max abs logit diff";
    at::Tensor argmax = logits.argmax(-1);
    EXPECT_TRUE(argmax.equal(ref_.Get(p + ".argmax")))
        << p << ": argmax differs on " << (argmax != ref_.Get(p + ".argmax")).sum().item<int64_t>() << " rows";
  }
  EXPECT_GE(prompts, 3);
}

TEST_P(ModelVsTransformers, GreedyTokensMatch) {
  int checked = 0;
  for (int i = 0; ref_.Has("p" + std::to_string(i) + ".greedy"); ++i, ++checked) {
    const std::string p = "p" + std::to_string(i);
    std::vector<int32_t> step = ref_.Ids(p + ".ids");
    std::vector<int32_t> want = ref_.Ids(p + ".greedy"), got;
    DenseKvCache cache(model_->config().num_layers);
    int64_t pos = 0;
    while (got.size() < want.size()) {
      at::Tensor logits = model_->Forward(step, pos, cache);
      pos += static_cast<int64_t>(step.size());
      got.push_back(static_cast<int32_t>(logits[0].argmax().item<int64_t>()));
      step = {got.back()};
    }
    EXPECT_EQ(got, want) << p;
  }
  EXPECT_GE(checked, 1);
}

// Running a sequence in two calls over a DenseKvCache equals running it in one:
// the KvProvider seam carries exactly the KV the model would have computed.
TEST_P(ModelVsTransformers, SplitRunEqualsWholeRun) {
  std::vector<int32_t> ids = ref_.Ids("p3.ids");
  ids.resize(std::min<size_t>(ids.size(), 96));
  ASSERT_GE(ids.size(), 4u);
  NoPrefixKv none;
  at::Tensor whole = model_->Forward(ids, 0, none, ForwardOptions{true});
  const size_t cut = ids.size() / 2;
  DenseKvCache cache(model_->config().num_layers);
  model_->Forward(std::vector<int32_t>(ids.begin(), ids.begin() + cut), 0, cache);
  EXPECT_EQ(cache.size(), static_cast<int64_t>(cut));
  at::Tensor tail = model_->Forward(std::vector<int32_t>(ids.begin() + cut, ids.end()), cut, cache, ForwardOptions{true});
  EXPECT_LE((tail - whole.slice(0, cut)).abs().max().item<double>(), 1e-4);
}

// Several continuations of one context run side by side as segments give
// each continuation the logits it gets alone: through the fused path (every
// prefix token visible), through the masked path (a per-head keep mask, as
// H2O selections make) and with no prefix at all.
TEST_P(ModelVsTransformers, SegmentsEqualSeparateRuns) {
  std::vector<int32_t> ids = ref_.Ids("p3.ids");
  ASSERT_GE(ids.size(), 40u);
  const int64_t ctx = 20;
  const std::vector<std::vector<int32_t>> conts = {{ids.begin() + 20, ids.begin() + 27}, {ids[31]},
                                                   {ids.begin() + 28, ids.begin() + 40}};
  std::vector<int32_t> run;
  std::vector<int64_t> segments;
  for (const auto& c : conts) run.insert(run.end(), c.begin(), c.end()), segments.push_back(static_cast<int64_t>(c.size()));
  const int layers = model_->config().num_layers, hq = model_->config().num_heads;
  // fp32 rounding of GEMMs and attention kernels of other shapes (a segment
  // mask instead of the causal kernel): relative to the logits' size.
  auto tol = [](const at::Tensor& logits) { return 1e-5 * std::max(1.0, logits.abs().max().item<double>()); };

  // Serves a DenseKvCache's KV with a fixed keep mask per query head.
  struct MaskedKv final : KvProvider {
    DenseKvCache& cache;
    int hq;
    MaskedKv(DenseKvCache& c, int h) : cache(c), hq(h) {}
    PrefixKv Prefix(const LayerQkv& qkv) override {
      PrefixKv p = cache.Prefix(qkv);
      const int64_t n = p.k.size(1);
      // The keep mask lives where the queries do (Attend's contract).
      p.keep = (at::arange(hq * n, at::TensorOptions().dtype(at::kLong).device(qkv.q.device())).view({hq, n}) *
                (qkv.layer + 3)) % 5 != 0;
      return p;
    }
    void Append(const LayerQkv& qkv) override { cache.Append(qkv); }
  };
  for (bool masked : {false, true}) {
    DenseKvCache cache(layers);
    model_->Forward(std::vector<int32_t>(ids.begin(), ids.begin() + ctx), 0, cache);
    MaskedKv mk(cache, hq);
    KvProvider& kv = masked ? static_cast<KvProvider&>(mk) : cache;
    const auto mark = cache.Save();
    ForwardOptions fo{true};
    fo.segments = segments;
    at::Tensor together = model_->Forward(run, ctx, kv, fo);
    cache.Rewind(mark);
    int64_t row = 0;
    for (const auto& c : conts) {
      at::Tensor alone = model_->Forward(c, ctx, kv, ForwardOptions{true});
      cache.Rewind(mark);
      const int64_t n = static_cast<int64_t>(c.size());
      EXPECT_LE((together.slice(0, row, row + n) - alone).abs().max().item<double>(), tol(alone)) << "masked " << masked;
      row += n;
    }
  }
  NoPrefixKv none;
  ForwardOptions fo{true};
  fo.segments = segments;
  at::Tensor together = model_->Forward(run, 0, none, fo);
  int64_t row = 0;
  for (const auto& c : conts) {
    const int64_t n = static_cast<int64_t>(c.size());
    at::Tensor alone = model_->Forward(c, 0, none, ForwardOptions{true});
    EXPECT_LE((together.slice(0, row, row + n) - alone).abs().max().item<double>(), tol(alone));
    row += n;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelVsTransformers,
                         ::testing::Values("tiny-opt-preln", "tiny-opt-postln-proj", "tiny-llama-gqa",
                                           "tiny-llama-linrope", "smollm2"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

TEST(Model, RejectsTooLongPrompt) {
  ModelConfig c;
  c.vocab_size = 10;
  c.max_positions = 4;
  EXPECT_TRUE(ValidateTokens(c, {1, 2, 3, 4}, 0).ok());
  Status s = ValidateTokens(c, {1, 2, 3, 4}, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("longer than the model's context of 4"), std::string::npos);
  EXPECT_FALSE(ValidateTokens(c, {10}, 0).ok());
  EXPECT_FALSE(ValidateTokens(c, {}, 0).ok());
}

}  // namespace
}  // namespace impress
