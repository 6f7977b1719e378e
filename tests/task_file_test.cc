// Task files (data/task_file.h): lines grouped by context in file order, each
// kind of line parsed, every malformed line refused with its file and line;
// RULER's answer matching.
#include <fstream>

#include <gtest/gtest.h>

#include "data/task_file.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

std::string Write(const TempDir& dir, const std::string& text) {
  const std::string path = dir.File("tasks.jsonl");
  std::ofstream(path) << text;
  return path;
}

TEST(TaskFileTest, GroupsLinesByContextInFileOrder) {
  TempDir dir;
  const std::string path = Write(dir,
      R"({"context": "A", "question": "q1", "choices": ["x", "y"], "gold": 1})" "\n"
      R"({"context": "B", "question": "q2", "answers": ["42"], "max_new_tokens": 8})" "\n"
      "\n"
      R"({"context": "A", "question": "q3", "answers": ["7", "8"]})" "\n");
  auto f = LoadTaskFile(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].text, "A");
  ASSERT_EQ((*f)[0].lines.size(), 2u);
  EXPECT_EQ((*f)[0].lines[0].line, 1);
  EXPECT_FALSE((*f)[0].lines[0].generates());
  EXPECT_EQ((*f)[0].lines[0].doc.gold, 1);
  EXPECT_EQ((*f)[0].lines[0].doc.choices, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ((*f)[0].lines[1].line, 4);
  EXPECT_TRUE((*f)[0].lines[1].generates());
  EXPECT_EQ((*f)[0].lines[1].max_new_tokens, 16);  // the default
  EXPECT_EQ((*f)[1].lines[0].doc.text, "q2");
  EXPECT_EQ((*f)[1].lines[0].max_new_tokens, 8);
  EXPECT_EQ((*f)[1].lines[0].answers, (std::vector<std::string>{"42"}));
}

TEST(TaskFileTest, RefusesEachMalformedLineWithItsPlace) {
  TempDir dir;
  const std::string ok = R"({"context": "A", "question": "q", "choices": ["x", "y"], "gold": 0})";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"context\": ", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"question": "q", "answers": ["a"]})", "no \"context\" field"},
      {R"({"context": 3, "question": "q", "answers": ["a"]})", "\"context\" is not a string"},
      {R"({"context": "", "question": "q", "answers": ["a"]})", "\"context\" is empty"},
      {R"({"context": "A", "answers": ["a"]})", "no \"question\" field"},
      {R"({"context": "A", "question": "q"})", "not neither"},
      {R"({"context": "A", "question": "q", "choices": ["x", "y"], "gold": 0, "answers": ["a"]})", "not both"},
      {R"({"context": "A", "question": "q", "choices": ["x", "y"]})", "no \"gold\" field"},
      {R"({"context": "A", "question": "q", "choices": ["x", "y"], "gold": 2})", "\"gold\" 2 is out of range for 2 choices"},
      {R"({"context": "A", "question": "q", "choices": ["x", "y"], "gold": 0.5})", "\"gold\": expected an integer"},
      {R"({"context": "A", "question": "q", "choices": ["x"], "gold": 0})", "fewer than 2"},
      {R"({"context": "A", "question": "q", "choices": "xy", "gold": 0})", "\"choices\" is not a list of strings"},
      {R"({"context": "A", "question": "q", "answers": []})", "\"answers\" is empty"},
      {R"({"context": "A", "question": "q", "answers": [""]})", "an empty string"},
      {R"({"context": "A", "question": "q", "answers": [5]})", "\"answers\" is not a list of strings"},
      {R"({"context": "A", "question": "q", "answers": ["a"], "max_new_tokens": 0})", "below 1"},
      {"{\"context\": \"\xff\"}", "invalid UTF-8"},
  };
  for (const auto& [line, want] : cases) {
    const std::string path = Write(dir, ok + "\n" + line + "\n");
    auto f = LoadTaskFile(path);
    ASSERT_FALSE(f.ok()) << line;
    EXPECT_NE(f.status().message().find(path + ":2: "), std::string::npos) << f.status().message();
    EXPECT_NE(f.status().message().find(want), std::string::npos) << f.status().message();
  }
  EXPECT_NE(LoadTaskFile(Write(dir, "\n")).status().message().find("empty file"), std::string::npos);
  EXPECT_TRUE(LoadTaskFile(dir.File("missing.jsonl")).status().IsNotFound());
}

TEST(TaskFileTest, WrittenTextReadsBackAsTheSameQuestions) {
  TempDir dir;
  const std::string path = Write(dir,
      R"({"context": "A \"quoted\"\nline", "question": " q1", "choices": ["x", "y", "z"], "gold": 2})" "\n"
      R"({"context": "B", "question": "q2", "answers": ["42", "7"], "max_new_tokens": 8})" "\n"
      R"({"context": "A \"quoted\"\nline", "question": "q3", "answers": ["\u00e9t\u00e9"]})" "\n");
  auto first = LoadTaskFile(path);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const std::string again = dir.File("again.jsonl");
  std::ofstream(again) << TaskFileText(*first);
  auto second = LoadTaskFile(again);
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(second->size(), first->size());
  int line = 0;
  for (size_t c = 0; c < first->size(); ++c) {
    const TaskContext &a = (*first)[c], &b = (*second)[c];
    EXPECT_EQ(a.text, b.text);
    ASSERT_EQ(a.lines.size(), b.lines.size());
    for (size_t i = 0; i < a.lines.size(); ++i) {
      EXPECT_EQ(b.lines[i].line, ++line);  // renumbered: contexts' lines written together
      EXPECT_EQ(a.lines[i].doc.text, b.lines[i].doc.text);
      EXPECT_EQ(a.lines[i].doc.choices, b.lines[i].doc.choices);
      EXPECT_EQ(a.lines[i].doc.gold, b.lines[i].doc.gold);
      EXPECT_EQ(a.lines[i].answers, b.lines[i].answers);
      EXPECT_EQ(a.lines[i].max_new_tokens, b.lines[i].max_new_tokens);
    }
  }
  EXPECT_EQ((*second)[0].lines[1].answers, (std::vector<std::string>{"\u00e9t\u00e9"}));
}

TEST(TaskFileTest, AnswersAreFoundAsRulerFindsThem) {
  EXPECT_EQ(AnswerShare({"1234567"}, " The number is 1234567."), 1.0);
  EXPECT_EQ(AnswerShare({"Blue"}, "the sky is blue"), 1.0);  // case-insensitive
  EXPECT_EQ(AnswerShare({"12", "34"}, "12 and 3 4"), 0.5);
  EXPECT_EQ(AnswerShare({"x"}, ""), 0.0);
}

}  // namespace
}  // namespace impress
