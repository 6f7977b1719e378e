// The retrieval task's generator (data/retrieval.h): deterministic for a
// seed, each haystack within its token budget, every gold value once in its
// haystack, every other choice a value of the same haystack.
#include "data/retrieval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "model/tokenizer.h"
#include "test_util.h"

namespace impress {
namespace {

int Occurrences(const std::string& text, const std::string& s) {
  int n = 0;
  for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 1)) ++n;
  return n;
}

class RetrievalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = testing::FixtureManifest();
    auto tok = Tokenizer::FromFile(manifest["tokenizers"]["gpt2"].get<std::string>() + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    tok_ = std::move(*tok);
    const TaskSpec* piqa = FindTask("piqa");
    auto train = LoadSplit(*piqa, SplitPath(testing::DataDir(), *piqa, "train"));
    ASSERT_TRUE(train.ok()) << train.status().message();
    filler_ = RetrievalFiller(*train);
  }
  std::unique_ptr<Tokenizer> tok_;
  std::vector<std::string> filler_;
};

TEST_F(RetrievalTest, FillerIsSentencesWithoutDigits) {
  ASSERT_GT(filler_.size(), 1000u);
  for (const std::string& s : filler_) {
    EXPECT_TRUE(std::none_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) << s;
    EXPECT_TRUE(s.back() == '.' || s.back() == '!' || s.back() == '?') << s;
  }
}

TEST_F(RetrievalTest, HaystacksHoldEveryNeedleOnceWithinTheirBudget) {
  RetrievalOptions opt;
  opt.haystack_tokens = 1024;
  auto hays = MakeHaystacks(filler_, *tok_, opt, 3);
  ASSERT_TRUE(hays.ok()) << hays.status().message();
  ASSERT_EQ(hays->size(), 3u);
  const int n = NeedlesPerHaystack(opt);
  EXPECT_EQ(n, 20);
  for (const Haystack& h : *hays) {
    auto ids = tok_->Encode(h.text, false);
    EXPECT_EQ(static_cast<int64_t>(ids->size()), h.tokens);
    EXPECT_LE(h.tokens, 1024);
    EXPECT_GE(h.tokens, 1024 - 64);  // filled to within about one sentence
    EXPECT_EQ(h.text.substr(h.text.size() - 2), "\n\n");
    ASSERT_EQ(static_cast<int>(h.needles.size()), n);
    ASSERT_EQ(static_cast<int>(h.questions.size()), n);
    std::set<std::string> keys, values, asked;
    size_t last = 0;
    for (const Needle& nd : h.needles) {
      keys.insert(nd.key), values.insert(nd.value);
      const std::string sentence = "The secret code for " + nd.key + " is " + nd.value + ".";
      EXPECT_EQ(Occurrences(h.text, sentence), 1) << sentence;
      EXPECT_EQ(Occurrences(h.text, nd.value), 1) << nd.value;
      const size_t at = h.text.find(sentence);
      EXPECT_GE(at, last) << "needles are listed in the order they occur";
      last = at;
    }
    EXPECT_EQ(static_cast<int>(keys.size()), n);
    EXPECT_EQ(static_cast<int>(values.size()), n);
    for (const Doc& q : h.questions) {
      ASSERT_EQ(q.choices.size(), 4u);
      ASSERT_GE(q.gold, 0);
      ASSERT_LT(q.gold, 4);
      const auto gold = std::find_if(h.needles.begin(), h.needles.end(),
                                     [&](const Needle& nd) { return q.text == RetrievalQuestion(nd.key); });
      ASSERT_NE(gold, h.needles.end()) << q.text;
      EXPECT_EQ(q.choices[q.gold], gold->value);
      asked.insert(gold->key);
      EXPECT_EQ(std::set<std::string>(q.choices.begin(), q.choices.end()).size(), 4u);
      for (const std::string& c : q.choices) EXPECT_TRUE(values.count(c)) << c << " is not a value of this haystack";
    }
    EXPECT_EQ(static_cast<int>(asked.size()), n) << "every needle is asked once";
  }
  EXPECT_NE((*hays)[0].text, (*hays)[1].text);
}

TEST_F(RetrievalTest, SameSeedSameHaystacksAndEachIndependentOfTheCount) {
  RetrievalOptions opt;
  opt.haystack_tokens = 512;
  auto a = MakeHaystacks(filler_, *tok_, opt, 3);
  auto b = MakeHaystacks(filler_, *tok_, opt, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ((*a)[i].text, (*b)[i].text);
    for (size_t q = 0; q < (*a)[i].questions.size(); ++q) {
      EXPECT_EQ((*a)[i].questions[q].text, (*b)[i].questions[q].text);
      EXPECT_EQ((*a)[i].questions[q].choices, (*b)[i].questions[q].choices);
      EXPECT_EQ((*a)[i].questions[q].gold, (*b)[i].questions[q].gold);
    }
  }
  opt.seed = 99;
  auto c = MakeHaystacks(filler_, *tok_, opt, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_NE((*c)[0].text, (*a)[0].text);
}

TEST_F(RetrievalTest, ImpossibleOptionsAreErrors) {
  RetrievalOptions opt;
  opt.haystack_tokens = 1 << 20;  // more needles than keys
  auto r = MakeHaystacks(filler_, *tok_, opt, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("retrieval:"), std::string::npos) << r.status().message();
  opt.haystack_tokens = 64;
  opt.needles_per_1k = 200;  // the needles alone exceed the haystack
  EXPECT_FALSE(MakeHaystacks(filler_, *tok_, opt, 1).ok());
}

}  // namespace
}  // namespace impress
