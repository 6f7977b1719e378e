// Token ids against Hugging Face's tokenizers on every text field of the four
// datasets plus hard strings (make_fixtures.py writes transformers' ids).
#include "model/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

class TokenizerVsTransformers : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVsTransformers, IdsMatchOnEveryText) {
  auto manifest = testing::FixtureManifest();
  ASSERT_TRUE(manifest["tokenizers"].contains(GetParam()));
  const std::string dir = manifest["tokenizers"][GetParam()];
  auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  std::ifstream in(testing::FixturesDir() + "/tokenizer/" + GetParam() + ".jsonl");
  ASSERT_TRUE(in) << "reference ids missing";
  std::string line;
  int total = 0, mismatches = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    const std::string text = j["text"];
    auto want = j["ids"].get<std::vector<int32_t>>();
    auto got = (*tok)->Encode(text);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ++total;
    if (*got != want && ++mismatches <= 5)
      ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n  want " << nlohmann::json(want).dump()
                    << "\n  got  " << nlohmann::json(*got).dump();
  }
  EXPECT_GT(total, 80000);
  EXPECT_EQ(mismatches, 0) << "of " << total << " texts";
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, TokenizerVsTransformers, ::testing::Values("smollm2", "gpt2", "llama2"));

TEST(Tokenizer, ByteLevelDecodeRoundTrips) {
  auto manifest = testing::FixtureManifest();
  auto tok = Tokenizer::FromFile(manifest["tokenizers"]["gpt2"].get<std::string>() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  for (std::string s : {"Hello world", " café 😀\n\ttabs  and  spaces", "日本語 12345"}) {
    auto ids = (*tok)->Encode(s, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ((*tok)->Decode(*ids), s);
  }
}

TEST(Tokenizer, RejectsInvalidUtf8) {
  auto manifest = testing::FixtureManifest();
  auto tok = Tokenizer::FromFile(manifest["tokenizers"]["llama2"].get<std::string>() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  auto ids = (*tok)->Encode("bad \xC3\x28 bytes");
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("not valid UTF-8"), std::string::npos);
}

TEST(Tokenizer, MalformedFilesNameFileAndProblem) {
  TempDir dir;
  struct Case {
    std::string json, expect;
  } cases[] = {
      {"{\"model\":", "not valid JSON"},
      {"{}", "missing object 'model'"},
      {R"({"model":{"type":"Unigram","vocab":[]}})", "model type 'Unigram' is not supported"},
      {R"({"model":{"type":"BPE","merges":[]}})", "model.vocab is missing"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}})", "uses a token missing from the vocabulary"},
      {R"({"model":{"type":"BPE","vocab":{"a":"zero"},"merges":[]}})", "is not a valid id"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"normalizer":{"type":"NFKC"}})",
       "normalizer: normalizer type 'NFKC' is not supported"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(("}}})",
       "does not compile"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":"x"}]})",
       "added_tokens entry needs"},
  };
  for (const auto& c : cases) {
    dir.Write("tokenizer.json", c.json);
    auto t = Tokenizer::FromFile(dir.File("tokenizer.json"));
    ASSERT_FALSE(t.ok()) << c.json;
    const std::string& m = t.status().message();
    EXPECT_NE(m.find(dir.File("tokenizer.json")), std::string::npos) << m;
    EXPECT_NE(m.find(c.expect), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace impress
