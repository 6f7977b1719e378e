#include "data/task.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/named.h"
#include "data/jsonl.h"

namespace impress {
namespace {

using nlohmann::json;

// Field access with errors that say which field and what is wrong.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  StatusOr<std::string> Str(const char* key) const {
    if (!j_.contains(key)) return Status::InvalidArgument(std::string("missing field '") + key + "'");
    if (!j_[key].is_string()) return Status::InvalidArgument(std::string("field '") + key + "' is not a string");
    return j_[key].get<std::string>();
  }
  StatusOr<int> Label(const char* key, int num_choices) const {
    if (!j_.contains(key)) return Status::InvalidArgument(std::string("missing field '") + key + "'");
    if (!j_[key].is_number_integer()) return Status::InvalidArgument(std::string("field '") + key + "' is not an integer");
    int v = j_[key].get<int>();
    if (v < 0 || v >= num_choices)
      return Status::InvalidArgument(std::string("field '") + key + "' is " + std::to_string(v) + ", not in [0, " +
                           std::to_string(num_choices) + ")");
    return v;
  }
  const json& raw() const { return j_; }

 private:
  const json& j_;
};

StatusOr<Doc> Piqa(const json& line) {
  const Fields f(line);
  Doc d;
  ASSIGN_OR_RETURN(std::string goal, f.Str("goal"));
  ASSIGN_OR_RETURN(std::string sol1, f.Str("sol1"));
  ASSIGN_OR_RETURN(std::string sol2, f.Str("sol2"));
  ASSIGN_OR_RETURN(d.gold, f.Label("label", 2));
  d.text = "Question: " + goal + "\nAnswer:";
  d.choices = {sol1, sol2};
  return d;
}

StatusOr<Doc> Rte(const json& line) {
  const Fields f(line);
  Doc d;
  ASSIGN_OR_RETURN(std::string s1, f.Str("sentence1"));
  ASSIGN_OR_RETURN(std::string s2, f.Str("sentence2"));
  ASSIGN_OR_RETURN(d.gold, f.Label("label", 2));
  d.text = s1 + "\nQuestion: " + s2 + " True or False?\nAnswer:";
  d.choices = {"True", "False"};
  return d;
}

// Python's str.strip() for the ASCII whitespace these texts hold.
std::string Strip(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) + 1 - b);
}

// lm-eval's convert_choice: lower-case the first character only.
std::string LowerFirst(std::string c) {
  if (!c.empty() && c[0] >= 'A' && c[0] <= 'Z') c[0] = static_cast<char>(c[0] - 'A' + 'a');
  return c;
}

StatusOr<Doc> Copa(const json& line) {
  const Fields f(line);
  Doc d;
  ASSIGN_OR_RETURN(std::string premise, f.Str("premise"));
  ASSIGN_OR_RETURN(std::string c1, f.Str("choice1"));
  ASSIGN_OR_RETURN(std::string c2, f.Str("choice2"));
  ASSIGN_OR_RETURN(std::string question, f.Str("question"));
  ASSIGN_OR_RETURN(d.gold, f.Label("label", 2));
  if (question != "cause" && question != "effect")
    return Status::InvalidArgument("field 'question' is '" + question + "', not 'cause' or 'effect'");
  if (c1.empty() || c2.empty()) return Status::InvalidArgument("field 'choice1' or 'choice2' is empty");
  std::string p = Strip(premise);
  if (p.empty()) return Status::InvalidArgument("field 'premise' is blank");
  size_t last = p.size() - 1;  // drop the final character (one code point)
  while (last > 0 && (static_cast<unsigned char>(p[last]) & 0xC0) == 0x80) --last;
  d.text = p.substr(0, last) + (question == "cause" ? " because" : " therefore");
  d.choices = {" " + LowerFirst(c1), " " + LowerFirst(c2)};
  return d;
}

StatusOr<Doc> OpenBookQa(const json& line) {
  const Fields f(line);
  Doc d;
  ASSIGN_OR_RETURN(d.text, f.Str("question_stem"));
  ASSIGN_OR_RETURN(std::string key, f.Str("answerKey"));
  const json& j = f.raw();
  if (!j.contains("choices") || !j["choices"].is_object()) return Status::InvalidArgument("missing object field 'choices'");
  const json& c = j["choices"];
  if (!c.contains("text") || !c["text"].is_array() || !c.contains("label") || !c["label"].is_array() ||
      c["text"].size() != c["label"].size() || c["text"].empty())
    return Status::InvalidArgument("field 'choices' needs equal-length arrays 'text' and 'label'");
  key.erase(0, key.find_first_not_of(" \t\n\r\f\v"));  // answerKey.lstrip()
  d.gold = -1;
  for (size_t i = 0; i < c["text"].size(); ++i) {
    if (!c["text"][i].is_string() || !c["label"][i].is_string())
      return Status::InvalidArgument("field 'choices' holds a non-string");
    d.choices.push_back(c["text"][i].get<std::string>());
    if (c["label"][i].get<std::string>() == key) d.gold = static_cast<int>(i);
  }
  if (d.gold < 0) return Status::InvalidArgument("answerKey '" + key + "' is not among choices.label");
  return d;
}

}  // namespace

const std::vector<TaskSpec>& Tasks() {
  static const std::vector<TaskSpec> kTasks = {
      {"piqa", TaskKind::kChoice, "train", "validation", true, Piqa},
      {"rte", TaskKind::kChoice, "train", "validation", false, Rte},
      {"copa", TaskKind::kChoice, "train", "validation", false, Copa},
      {"openbookqa", TaskKind::kChoice, "train", "test", true, OpenBookQa},
      {kRetrievalTask, TaskKind::kGenerated, nullptr, nullptr, false, nullptr},
  };
  return kTasks;
}

std::vector<std::string> BenchmarkTaskNames() {
  std::vector<std::string> names;
  for (const auto& t : Tasks())
    if (t.choice()) names.push_back(t.name);
  return names;
}

std::vector<std::string> TaskNames() {
  std::vector<std::string> names;
  for (const auto& t : Tasks()) names.push_back(t.name);
  return names;
}

Status CheckTaskName(const std::string& name, bool all_allowed) {
  if (FindTask(name) != nullptr) return Status::OK();
  return Status::InvalidArgument("--task: unknown task '" + name + "' (" + JoinNames(TaskNames()) +
                                 (all_allowed ? ", all)" : ")"));
}

const TaskSpec* FindTask(const std::string& name) {
  for (const auto& t : Tasks())
    if (name == t.name) return &t;
  return nullptr;
}

std::string SplitFile(const TaskSpec& task, const std::string& split) {
  return std::string(task.name) + "/" + split + ".jsonl";
}

std::string SplitPath(const std::string& data_dir, const TaskSpec& task, const std::string& split) {
  return data_dir + "/" + SplitFile(task, split);
}

StatusOr<std::vector<Doc>> LoadSplit(const TaskSpec& task, const std::string& path) {
  if (!task.choice()) return Status::InvalidArgument(path + ": task '" + task.name + "' reads no split files");
  std::vector<Doc> docs;
  RETURN_IF_ERROR(ForEachJsonLine(path, " (missing split? run 'make data')", [&](const json& j, int) -> Status {
    ASSIGN_OR_RETURN(Doc doc, task.read(j));
    docs.push_back(std::move(doc));
    return Status::OK();
  }));
  if (docs.empty()) return Status::InvalidArgument(path + ": empty file, no documents");
  return docs;
}

std::string FewShotExample(const Doc& doc) { return doc.text + " " + doc.choices[doc.gold]; }

std::string BuildPrefix(const std::vector<Doc>& shots) {
  std::string out;
  for (const auto& d : shots) out += FewShotExample(d) + "\n\n";
  return out;
}

}  // namespace impress
