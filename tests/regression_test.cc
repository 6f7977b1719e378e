// The CI accuracy regression (tests/expected/accuracy_smollm2.json) against
// SmolLM2: the committed numbers hold for the templates as they are, and a
// one-character change to a prompt template moves them beyond tolerance.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "experiment/regression.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "test_util.h"

namespace impress {
namespace {

class RegressionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = IMPRESS_DEFAULT_MODEL;
    if (!std::filesystem::exists(dir + "/config.json")) IMPRESS_MISSING_FIXTURE(dir);
    std::ifstream in(IMPRESS_EXPECTED_ACCURACY);
    ASSERT_TRUE(in) << IMPRESS_EXPECTED_ACCURACY;
    spec_ = nlohmann::ordered_json::parse(in);
    // One task and system keep the test short; the full check is the
    // accuracy_regression test.
    spec_["config"]["tasks"] = {"piqa"};
    spec_["config"]["systems"] = {"recomp"};
    retrieval_ = spec_["config"]["retrieval"];
    spec_["config"].erase("retrieval");
    auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    tok_ = std::move(*tok);
    auto model = LoadModel(dir, LoadOptions{"cpu", "float32"});
    ASSERT_TRUE(model.ok()) << model.status().message();
    model_ = std::move(*model);
  }

  nlohmann::ordered_json spec_, retrieval_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Model> model_;
};

TEST_F(RegressionTest, CommittedNumbersHold) {
  auto rows = RunRegression(*model_, *tok_, spec_, testing::DataDir());
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  Status s = CompareRegression(spec_, *rows, /*require_all=*/false);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_F(RegressionTest, OneCharacterTemplateChangeFails) {
  // PIQA's template is "Question: {goal}\nAnswer:"; make it "Answer;".
  int edited = 0;
  auto edit = [&edited](Doc* d) {
    const size_t at = d->text.rfind("\nAnswer:");
    ASSERT_NE(at, std::string::npos) << d->text;
    d->text[at + 7] = ';';
    ++edited;
  };
  auto rows = RunRegression(*model_, *tok_, spec_, testing::DataDir(), {}, edit);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_GT(edited, 0);
  Status s = CompareRegression(spec_, *rows, /*require_all=*/false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("piqa/recomp gold_loglik_mean"), std::string::npos) << s.message();
}

TEST_F(RegressionTest, RandomInPlaceOfImpressFailsTheRetrievalRow) {
  // The committed retrieval row of `impress`, scored with a uniformly random
  // selection of the same retention: a broken selection must not pass.
  ASSERT_TRUE(retrieval_.is_object()) << "the committed file has no config.retrieval";
  spec_["config"]["retrieval"] = retrieval_;
  RegressionSelection only;
  only.tasks = {"retrieval"};
  only.systems = {"impress"};
  auto rows = RunRegression(*model_, *tok_, spec_, testing::DataDir(), only);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_TRUE(CompareRegression(spec_, *rows, /*require_all=*/false).ok());  // impress itself holds
  only.substitute = {{"impress", "random"}};
  rows = RunRegression(*model_, *tok_, spec_, testing::DataDir(), only);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  Status s = CompareRegression(spec_, *rows, /*require_all=*/false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("retrieval/impress acc "), std::string::npos) << s.message();
}

}  // namespace
}  // namespace impress
