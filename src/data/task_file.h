// A task file: a user's own long-context questions (docs/data.md, "Task
// files"). JSONL, one question a line:
//   {"context": TEXT, "question": TEXT, "choices": [TEXT, ...], "gold": INDEX}
//   {"context": TEXT, "question": TEXT, "answers": [TEXT, ...], "max_new_tokens": N}
// Lines with the same context share one stored prefix. A multiple-choice
// line is scored as lm-evaluation-harness scores one (each choice after " ");
// a generation line by greedy decoding of up to max_new_tokens (default 16)
// tokens after context + question, scored as RULER scores (an answer counts
// when it occurs in the output, case-insensitive).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "data/task.h"

namespace impress {

struct TaskLine {
  int line = 0;                      // 1-based line number in its file
  Doc doc;                           // text: the question; choices and gold when multiple choice
  std::vector<std::string> answers;  // a generation line's answers (empty: multiple choice)
  int max_new_tokens = 16;
  bool generates() const { return !answers.empty(); }
};

// The questions of one context, in file order.
struct TaskContext {
  std::string text;
  std::vector<TaskLine> lines;
};

// The file's contexts in the order they first occur. Errors name
// "<path>:<line>" and the problem: invalid UTF-8 or JSON, not an object, a
// missing or mistyped field, an empty context, both or neither of `choices`
// and `answers`, fewer than two choices, `gold` out of range, no answers or
// an empty one, max_new_tokens below 1; and a file with no lines.
StatusOr<std::vector<TaskContext>> LoadTaskFile(const std::string& path);

// What results call a task file's questions: its file name without folders.
std::string TaskFileName(const std::string& path);

// The contexts' questions as a task file's text, one line per question in
// `lines` order within each context, contexts in order: LoadTaskFile reads it
// back as the same contexts and questions (line numbers renumbered from 1).
std::string TaskFileText(const std::vector<TaskContext>& contexts);

// RULER's string_match_all for one output: the share of `answers` that occur
// in `output`, case-insensitive (ASCII).
double AnswerShare(const std::vector<std::string>& answers, const std::string& output);

}  // namespace impress
