// Dataset loaders and prompts against the lm-eval templates (worked 2-shot
// examples written from them, data/README.md), few-shot sampling, the prefix pool and
// the request stream.
#include "data/task.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "data/workload.h"
#include "model/tokenizer.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

std::vector<Doc> Load(const char* task, const char* split) {
  const TaskSpec* t = FindTask(task);
  EXPECT_NE(t, nullptr);
  auto docs = LoadSplit(*t, SplitPath(testing::DataDir(), *t, split));
  EXPECT_TRUE(docs.ok()) << docs.status().message();
  return docs.ok() ? *docs : std::vector<Doc>{};
}

struct Worked {
  const char* task;
  const char* eval_split;
  std::string context;
  std::vector<std::string> continuations;
  int gold;
};

// The worked examples: train rows 0 and 1 as shots, evaluation row 0 as query.
TEST(Prompts, ReproduceWorkedExamplesByteForByte) {
  const Worked cases[] = {
      {"piqa", "validation",
       "Question: When boiling butter, when it's ready, you can\nAnswer: Pour it into a jar\n\nQuestion: To "
       "permanently attach metal legs to a chair, you can\nAnswer: Weld the metal together to get it to stay firmly "
       "in place\n\nQuestion: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
       {" Provide the guinea pig with a cage full of a few inches of bedding made of ripped paper strips, you will "
        "also need to supply it with a water bottle and a food dish.",
        " Provide the guinea pig with a cage full of a few inches of bedding made of ripped jeans material, you will "
        "also need to supply it with a water bottle and a food dish."},
       0},
      {"rte", "validation",
       "No Weapons of Mass Destruction Found in Iraq Yet.\nQuestion: Weapons of Mass Destruction Found in Iraq. True "
       "or False?\nAnswer: False\n\nA place of sorrow, after Pope John Paul II died, became a place of celebration, "
       "as Roman Catholic faithful gathered in downtown Chicago to mark the installation of new Pope Benedict "
       "XVI.\nQuestion: Pope Benedict XVI is the new leader of the Roman Catholic Church. True or False?\nAnswer: "
       "True\n\nDana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer at age 44, according "
       "to the Christopher Reeve Foundation.\nQuestion: Christopher Reeve had an accident. True or False?\nAnswer:",
       {" True", " False"},
       1},
      {"copa", "validation",
       "My body cast a shadow over the grass because  the sun was rising.\n\nThe woman tolerated her friend's "
       "difficult behavior because  the woman knew her friend was going through a hard time.\n\nThe man turned on "
       "the faucet therefore",
       {"  the toilet filled with water.", "  water flowed from the spout."},
       1},
      {"openbookqa", "validation",  // validation row 0, as for the others
       "The sun is responsible for plants sprouting, blooming and wilting\n\nWhen standing miles away from Mount "
       "Rushmore the mountains seem smaller than in photographs\n\nFrilled sharks and angler fish live far beneath "
       "the surface of the ocean, which is why they are known as",
       {" Deep sea animals", " fish", " Long Sea Fish", " Far Sea Animals"},
       0},
  };
  for (const auto& c : cases) {
    std::vector<Doc> train = Load(c.task, "train");
    std::vector<Doc> eval = Load(c.task, c.eval_split);
    ASSERT_GE(train.size(), 2u);
    ASSERT_GE(eval.size(), 1u);
    EXPECT_EQ(BuildPrefix({train[0], train[1]}) + eval[0].text, c.context) << c.task;
    ASSERT_EQ(eval[0].choices.size(), c.continuations.size()) << c.task;
    for (size_t i = 0; i < c.continuations.size(); ++i) EXPECT_EQ(" " + eval[0].choices[i], c.continuations[i]);
    EXPECT_EQ(eval[0].gold, c.gold) << c.task;
  }
}

TEST(Datasets, SplitsLoadCompletely) {
  const std::map<std::string, size_t> sizes = {{"piqa/train", 16113}, {"piqa/validation", 1838},
                                               {"rte/train", 2490},   {"rte/validation", 277},
                                               {"copa/train", 400},   {"copa/validation", 100},
                                               {"openbookqa/train", 4957}, {"openbookqa/test", 500}};
  for (const auto& [name, n] : sizes) {
    std::string task = name.substr(0, name.find('/')), split = name.substr(name.find('/') + 1);
    EXPECT_EQ(Load(task.c_str(), split.c_str()).size(), n) << name;
  }
  // Strings are used exactly as stored: PIQA keeps edge spaces, COPA train 128 its leading space.
  std::vector<Doc> piqa = Load("piqa", "validation");
  ASSERT_GE(piqa.size(), 2u);
  EXPECT_EQ(piqa[1].choices[0], "replace drawer with bobby pin ");
  std::vector<Doc> copa = Load("copa", "train");
  ASSERT_GE(copa.size(), 129u);
  EXPECT_EQ(copa[128].choices[0].substr(0, 3), "  T");  // " " + " The..." (lower-casing a space changes nothing)
}

TEST(Datasets, BadInputNamesFileAndLine) {
  TempDir dir;
  const TaskSpec& piqa = *FindTask("piqa");
  const TaskSpec& obqa = *FindTask("openbookqa");
  struct Case {
    const TaskSpec* task;
    std::string body, expect;
  } cases[] = {
      {&piqa, "", "empty file"},
      {&piqa, R"({"goal":"g","sol1":"a","sol2":"b","label":0})" "\n" R"({"goal":"g","sol1":"a","label":1})",
       ":2: missing field 'sol2'"},
      {&piqa, R"({"goal":"g","sol1":"a","sol2":"b","label":"0"})", ":1: field 'label' is not an integer"},
      {&piqa, R"({"goal":"g","sol1":"a","sol2":"b","label":2})", ":1: field 'label' is 2, not in [0, 2)"},
      {&piqa, "{\"goal\":\"bad \xC3\x28\",\"sol1\":\"a\",\"sol2\":\"b\",\"label\":0}", ":1: invalid UTF-8"},
      {&piqa, "{\"goal\": ", ":1: not valid JSON"},
      {&obqa, R"({"question_stem":"q","choices":{"text":["a","b"],"label":["A","B"]},"answerKey":"C"})",
       "answerKey 'C' is not among choices.label"},
  };
  for (const auto& c : cases) {
    dir.Write("split.jsonl", c.body);
    auto docs = LoadSplit(*c.task, dir.File("split.jsonl"));
    ASSERT_FALSE(docs.ok()) << c.body;
    EXPECT_NE(docs.status().message().find(dir.File("split.jsonl")), std::string::npos) << docs.status().message();
    EXPECT_NE(docs.status().message().find(c.expect), std::string::npos) << docs.status().message();
  }
  auto missing = LoadSplit(piqa, dir.File("absent.jsonl"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(Workload, ShotsAreSeededAndDistinct) {
  std::vector<Doc> train = Load("copa", "train");
  ASSERT_GE(train.size(), 10u);
  auto a = SampleShots(train, 10, 7), b = SampleShots(train, 10, 7), c = SampleShots(train, 10, 8);
  EXPECT_EQ(BuildPrefix(a), BuildPrefix(b));
  EXPECT_NE(BuildPrefix(a), BuildPrefix(c));
  std::set<std::string> texts;
  for (const auto& d : a) texts.insert(d.text);
  EXPECT_EQ(texts.size(), 10u);
}

TEST(Workload, PrefixPoolFillsToTargetLength) {
  auto manifest = testing::FixtureManifest();
  auto tok = Tokenizer::FromFile(manifest["tokenizers"]["gpt2"].get<std::string>() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  std::vector<Doc> train = Load("piqa", "train");
  ASSERT_FALSE(train.empty());
  PrefixPoolOptions opt;
  opt.size = 4;
  opt.target_tokens = 512;
  auto pool = BuildPrefixPool(train, **tok, opt);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  ASSERT_EQ(pool->size(), 4u);
  for (const auto& p : *pool) {
    auto ids = (*tok)->Encode(p.text, false);
    EXPECT_EQ(static_cast<int64_t>(ids->size()), p.tokens);
    EXPECT_LE(p.tokens, 512);
    EXPECT_GE(p.tokens, 512 - 120);  // filled up to within about one example
    EXPECT_EQ(p.text.substr(p.text.size() - 2), "\n\n");
  }
  EXPECT_NE((*pool)[0].text, (*pool)[1].text);
  auto again = BuildPrefixPool(train, **tok, opt);
  EXPECT_EQ((*again)[3].text, (*pool)[3].text);
  opt.target_tokens = 3;
  EXPECT_FALSE(BuildPrefixPool(train, **tok, opt).ok());
}

TEST(Workload, RequestStreamFollowsNormalOverPool) {
  RequestStreamOptions opt;
  opt.requests = 20000;
  opt.mean = 0.5;
  opt.spread = 0.1;
  auto stream = MakeRequestStream(50, 300, opt);
  ASSERT_EQ(stream.size(), 20000u);
  double sum = 0, sq = 0;
  std::set<int> docs;
  for (const auto& r : stream) {
    ASSERT_GE(r.prefix, 0);
    ASSERT_LT(r.prefix, 50);
    sum += r.prefix;
    sq += double(r.prefix) * r.prefix;
    if (docs.size() < 300) docs.insert(r.doc);
  }
  const double mean = sum / stream.size(), sd = std::sqrt(sq / stream.size() - mean * mean);
  EXPECT_NEAR(mean, 24.5, 0.3);
  EXPECT_NEAR(sd, 5.0, 0.3);
  EXPECT_EQ(docs.size(), 300u);  // the first 300 requests visit every document once
  EXPECT_EQ(MakeRequestStream(50, 300, opt)[123].prefix, stream[123].prefix);
}

}  // namespace
}  // namespace impress
