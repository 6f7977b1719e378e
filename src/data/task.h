// The four benchmark tasks in lm-evaluation-harness's multiple-choice form:
// loaders for their JSONL splits and the prompt pieces lm-eval builds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace impress {

// One document: lm-eval's doc_to_text, doc_to_choice and target index.
struct Doc {
  std::string text;                  // context of this document, no trailing delimiter
  std::vector<std::string> choices;  // each scored as " " + choice (target delimiter)
  int gold = 0;                      // index of the correct choice
};

// A multiple-choice task reads its documents from split files; a generated
// one (the retrieval task of data/retrieval.h) builds them in memory.
enum class TaskKind : uint8_t { kChoice, kGenerated };

// One JSONL line (the Hugging Face field names) into a document; errors say
// which field and what is wrong.
using DocReader = StatusOr<Doc> (*)(const nlohmann::json& line);

struct TaskSpec {
  const char* name;         // "piqa", "rte", "copa", "openbookqa", "retrieval"
  TaskKind kind;
  const char* train_split;  // few-shot pool (kChoice; null otherwise)
  const char* eval_split;   // the split lm-eval scores (kChoice; null otherwise)
  bool reports_acc_norm;    // lm-eval's task config lists acc_norm
  DocReader read;           // (kChoice; null otherwise)
  bool choice() const { return kind == TaskKind::kChoice; }
};

// The task table, in the order tables print them: the four benchmark tasks,
// then the retrieval task. `impress list tasks` prints it; scripts read it there.
const std::vector<TaskSpec>& Tasks();
// nullptr when `name` is not a task.
const TaskSpec* FindTask(const std::string& name);
// The generated task of data/retrieval.h: haystacks built in memory, no split files.
inline constexpr char kRetrievalTask[] = "retrieval";
// The multiple-choice tasks' names, in Tasks()'s order (the multi-task commands' default).
std::vector<std::string> BenchmarkTaskNames();
// Every task `eval` runs, in Tasks()'s order.
std::vector<std::string> TaskNames();
// OK when `name` is one of TaskNames(); else "--task: unknown task '<name>'
// (<TaskNames>[, all])", the list ending in `all` where the caller takes it.
Status CheckTaskName(const std::string& name, bool all_allowed);

// Reads `path` (one JSON object per line, the Hugging Face field names) into
// documents. Errors name the file and line: invalid UTF-8 or JSON, a missing
// field, a field of the wrong type, an empty file; a task that reads no split
// files (generated) is refused.
StatusOr<std::vector<Doc>> LoadSplit(const TaskSpec& task, const std::string& path);
// <task>/<split>.jsonl, relative to the data directory.
std::string SplitFile(const TaskSpec& task, const std::string& split);
// data_dir/SplitFile(task, split)
std::string SplitPath(const std::string& data_dir, const TaskSpec& task, const std::string& split);

// A few-shot example as lm-eval writes it: text + " " + gold choice.
std::string FewShotExample(const Doc& doc);
// The shared prefix: every example followed by the few-shot delimiter "\n\n".
std::string BuildPrefix(const std::vector<Doc>& shots);

}  // namespace impress
