// The experiment layer: sweeps, the regression comparison, and the
// motivation measurements against select/importance.h's own definitions.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/units.h"
#include "data/task.h"
#include "experiment/head_analysis.h"
#include "experiment/regression.h"
#include "experiment/sweep.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/importance.h"
#include "test_util.h"

namespace impress {
namespace {

// A size's text is the largest unit that divides it, and reads back exactly
// (command flags take their defaults from config numbers through it).
TEST(Units, BytesTextIsTheExactInverseOfParseBytes) {
  EXPECT_EQ(BytesText(0), "0");
  EXPECT_EQ(BytesText(64 << 20), "64M");
  EXPECT_EQ(BytesText(1536 << 10), "1536K");
  EXPECT_EQ(BytesText(int64_t{3} << 30), "3G");
  EXPECT_EQ(BytesText(int64_t{2} << 40), "2T");
  EXPECT_EQ(BytesText(1000), "1000");
  for (int64_t b : {int64_t{0}, int64_t{1}, int64_t{1023}, int64_t{4096}, int64_t{640} << 20, (int64_t{5} << 30) + 512}) {
    auto back = ParseBytes(BytesText(b));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, b) << BytesText(b);
  }
}

TEST(Sweep, CrossProductInOrder) {
  SweepAxes axes;
  axes.alpha = {0, 1};
  axes.chunk = {16, 32, 64};
  EXPECT_TRUE(axes.swept());
  std::vector<SweepPoint> p = SweepPoints(axes);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].alpha, 0);
  EXPECT_EQ(p[0].chunk, 16);
  EXPECT_EQ(p[2].chunk, 64);
  EXPECT_EQ(p[3].alpha, 1);
  EXPECT_EQ(p[3].chunk, 16);
  for (const auto& x : p) EXPECT_EQ(x.retention, 0.25);
  EXPECT_FALSE(SweepAxes{}.swept());
}

TEST(Sweep, OneResultStaysAsIs) {
  nlohmann::ordered_json a = {{"x", 1}}, b = {{"x", 2}};
  EXPECT_EQ(SweepResult({a}), a);
  nlohmann::ordered_json both = SweepResult({a, b});
  ASSERT_TRUE(both.contains("sweep"));
  EXPECT_EQ(both["sweep"][1]["x"], 2);
}

TEST(Regression, ComparesWithinTolerance) {
  nlohmann::ordered_json spec = DefaultRegressionSpec();
  spec["results"] = {{{"task", "piqa"}, {"system", "recomp"}, {"acc", 0.75}, {"acc_norm", 0.8}, {"gold_loglik_mean", -55.5}},
                     {{"task", "rte"}, {"system", "recomp"}, {"acc", 0.5}, {"acc_norm", 0.5}, {"gold_loglik_mean", -0.7}}};
  nlohmann::ordered_json same = spec["results"];
  same[0]["gold_loglik_mean"] = -55.505;  // within 0.01
  same[1]["acc"] = 0.55;                  // one document of 20
  EXPECT_TRUE(CompareRegression(spec, same, true).ok());
  nlohmann::ordered_json moved = same;
  moved[0]["gold_loglik_mean"] = -55.6;
  Status s = CompareRegression(spec, moved, true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("piqa/recomp gold_loglik_mean"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("rte/recomp"), std::string::npos) << s.message();
  nlohmann::ordered_json one = {same[0]};
  EXPECT_TRUE(CompareRegression(spec, one, false).ok());
  EXPECT_FALSE(CompareRegression(spec, one, true).ok());  // an expected row was not run
  nlohmann::ordered_json extra = same;
  extra.push_back({{"task", "copa"}, {"system", "recomp"}, {"acc", 0.5}, {"acc_norm", 0.5}, {"gold_loglik_mean", -1}});
  EXPECT_FALSE(CompareRegression(spec, extra, true).ok());  // no expected row for it
}

TEST(HeadAnalysis, PairwiseJaccardMatchesSetJaccard) {
  at::manual_seed(7);
  at::Tensor imp = at::rand({5, 40});
  for (int64_t k : {1, 7, 20, 40}) {
    at::Tensor m = PairwiseJaccard(imp, k);
    at::Tensor sets = TopKSets(imp, k);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j)
        EXPECT_NEAR(m[i][j].item<double>(), Jaccard(sets[i], sets[j]), 1e-6) << "k " << k << " pair " << i << "," << j;
  }
}

TEST(HeadAnalysis, MeasuresARealForwardPass) {
  auto manifest = testing::FixtureManifest();
  if (!manifest["models"].contains("tiny-llama-gqa")) IMPRESS_MISSING_FIXTURE("fixture model tiny-llama-gqa");
  const std::string dir = manifest["models"]["tiny-llama-gqa"];
  auto model = LoadModel(dir, LoadOptions{"cpu", "float32"});
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  std::vector<Doc> docs = {{"Question: how do you boil an egg?\nAnswer:", {" a", " b"}, 0},
                           {"Question: where do birds sleep?\nAnswer:", {" a", " b"}, 1}};
  const std::string prefix = "Question: what is water?\nAnswer: wet\n\nQuestion: what is fire?\nAnswer: hot\n\n";
  HeadAnalysisOptions o;
  o.retentions = {0.25, 1.0};
  o.retention = 0.25;
  o.chunk_tokens = 4;
  auto a = AnalyzeHeads(**model, **tok, prefix, docs, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const int h = (*model)->config().num_heads;
  EXPECT_EQ(a->docs, 2);
  EXPECT_EQ(a->heads, h);
  ASSERT_EQ(static_cast<int>(a->jaccard.size()), (*model)->config().num_layers);
  for (const auto& m : a->jaccard)
    for (int i = 0; i < h; ++i) {
      EXPECT_NEAR(m[i * h + i], 1.0, 1e-6);
      for (int j = 0; j < h; ++j) {
        EXPECT_NEAR(m[i * h + j], m[j * h + i], 1e-6);
        EXPECT_GE(m[i * h + j], 0.0);
      }
    }
  // Keeping every token: every pair of sets is the whole prefix.
  EXPECT_NEAR(a->all_heads[1], 1.0, 1e-6);
  EXPECT_NEAR(a->random[1], 1.0, 1e-12);
  const int64_t k = RetainedTokens(0.25, a->prefix_tokens);
  const double f = double(k) / a->prefix_tokens;
  EXPECT_NEAR(a->random[0], f / (2 - f), 1e-12);
  int64_t hist = 0;
  for (int64_t c : a->histogram) hist += c;
  EXPECT_EQ(hist, a->chunks_read);
  EXPECT_GT(a->important_share_mean, 0.0);
  EXPECT_LE(a->important_share_mean, 1.0);
}

}  // namespace
}  // namespace impress
