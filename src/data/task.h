// The four benchmark tasks in lm-evaluation-harness's multiple-choice form:
// loaders for their JSONL splits and the prompt pieces lm-eval builds.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// One document: lm-eval's doc_to_text, doc_to_choice and target index.
struct Doc {
  std::string text;                  // context of this document, no trailing delimiter
  std::vector<std::string> choices;  // each scored as " " + choice (target delimiter)
  int gold = 0;                      // index of the correct choice
};

struct TaskSpec {
  const char* name;        // "piqa", "rte", "copa", "openbookqa"
  const char* train_split; // few-shot pool
  const char* eval_split;  // the split lm-eval scores
  bool reports_acc_norm;   // lm-eval's task config lists acc_norm
};

// The registered tasks, in the order tables print them.
const std::vector<TaskSpec>& Tasks();
// nullptr when `name` is not a task.
const TaskSpec* FindTask(const std::string& name);
// The generated task of data/retrieval.h: haystacks built in memory, no split files.
inline constexpr char kRetrievalTask[] = "retrieval";
// The four benchmark tasks' names, in Tasks()'s order (the multi-task commands' default).
std::vector<std::string> BenchmarkTaskNames();
// Every task `eval` runs: the benchmark tasks, then the retrieval task.
std::vector<std::string> TaskNames();
// OK when `name` is one of TaskNames(); else "--task: unknown task '<name>'
// (<TaskNames>[, all])", the list ending in `all` where the caller takes it.
Status CheckTaskName(const std::string& name, bool all_allowed);

// Reads `path` (one JSON object per line, the Hugging Face field names) into
// documents. Errors name the file and line: invalid UTF-8 or JSON, a missing
// field, a field of the wrong type, an empty file.
StatusOr<std::vector<Doc>> LoadSplit(const TaskSpec& task, const std::string& path);
// data_dir/<task>/<split>.jsonl
std::string SplitPath(const std::string& data_dir, const TaskSpec& task, const std::string& split);

// A few-shot example as lm-eval writes it: text + " " + gold choice.
std::string FewShotExample(const Doc& doc);
// The shared prefix: every example followed by the few-shot delimiter "\n\n".
std::string BuildPrefix(const std::vector<Doc>& shots);

}  // namespace impress
