#include "data/task_file.h"

#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "common/json_get.h"
#include "data/jsonl.h"

namespace impress {
namespace {

using json = nlohmann::json;

// The string field `key` of `j`; an error names it and what it found.
StatusOr<std::string> Text(const json& j, const char* key) {
  if (!j.contains(key)) return Status::InvalidArgument(std::string("no \"") + key + "\" field");
  if (!j[key].is_string()) return Status::InvalidArgument(std::string("\"") + key + "\" is not a string");
  return j[key].get<std::string>();
}

StatusOr<std::vector<std::string>> Texts(const json& j, const char* key) {
  if (!j[key].is_array()) return Status::InvalidArgument(std::string("\"") + key + "\" is not a list of strings");
  std::vector<std::string> out;
  for (const json& e : j[key]) {
    if (!e.is_string()) return Status::InvalidArgument(std::string("\"") + key + "\" is not a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// One line's object as a TaskLine of `context`.
StatusOr<TaskLine> ParseLine(const json& j, std::string* context) {
  TaskLine t;
  ASSIGN_OR_RETURN(*context, Text(j, "context"));
  if (context->empty()) return Status::InvalidArgument("\"context\" is empty");
  ASSIGN_OR_RETURN(t.doc.text, Text(j, "question"));
  const bool mc = j.contains("choices"), gen = j.contains("answers");
  if (mc == gen) return Status::InvalidArgument("needs either \"choices\" (with \"gold\") or \"answers\", not " +
                                                std::string(mc ? "both" : "neither"));
  if (mc) {
    ASSIGN_OR_RETURN(t.doc.choices, Texts(j, "choices"));
    if (t.doc.choices.size() < 2) return Status::InvalidArgument("\"choices\" has fewer than 2 entries");
    if (!j.contains("gold")) return Status::InvalidArgument("no \"gold\" field");
    try {
      t.doc.gold = GetInteger<int>(j["gold"]);
    } catch (const std::invalid_argument& e) {
      return Status::InvalidArgument(std::string("\"gold\": ") + e.what());
    }
    if (t.doc.gold < 0 || t.doc.gold >= static_cast<int>(t.doc.choices.size()))
      return Status::InvalidArgument("\"gold\" " + std::to_string(t.doc.gold) + " is out of range for " +
                                     std::to_string(t.doc.choices.size()) + " choices");
    return t;
  }
  ASSIGN_OR_RETURN(t.answers, Texts(j, "answers"));
  if (t.answers.empty()) return Status::InvalidArgument("\"answers\" is empty");
  for (const std::string& a : t.answers)
    if (a.empty()) return Status::InvalidArgument("\"answers\" holds an empty string");
  if (j.contains("max_new_tokens")) {
    try {
      t.max_new_tokens = GetInteger<int>(j["max_new_tokens"]);
    } catch (const std::invalid_argument& e) {
      return Status::InvalidArgument(std::string("\"max_new_tokens\": ") + e.what());
    }
    if (t.max_new_tokens < 1) return Status::InvalidArgument("\"max_new_tokens\" is below 1");
  }
  return t;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

StatusOr<std::vector<TaskContext>> LoadTaskFile(const std::string& path) {
  std::vector<TaskContext> contexts;
  std::map<std::string, size_t> index;  // context text -> its place in `contexts`
  int lines = 0;
  RETURN_IF_ERROR(ForEachJsonLine(path, "", [&](const json& j, int lineno) -> Status {
    std::string context;
    ASSIGN_OR_RETURN(TaskLine t, ParseLine(j, &context));
    t.line = lineno;
    auto [it, added] = index.emplace(context, contexts.size());
    if (added) contexts.push_back(TaskContext{context, {}});
    contexts[it->second].lines.push_back(std::move(t));
    ++lines;
    return Status::OK();
  }));
  if (lines == 0) return Status::InvalidArgument(path + ": empty file, no questions");
  return contexts;
}

std::string TaskFileName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string TaskFileText(const std::vector<TaskContext>& contexts) {
  std::string out;
  for (const TaskContext& x : contexts)
    for (const TaskLine& l : x.lines) {
      nlohmann::ordered_json j = {{"context", x.text}, {"question", l.doc.text}};
      if (l.generates()) {
        j["answers"] = l.answers;
        j["max_new_tokens"] = l.max_new_tokens;
      } else {
        j["choices"] = l.doc.choices;
        j["gold"] = l.doc.gold;
      }
      out += j.dump() + "\n";
    }
  return out;
}

double AnswerShare(const std::vector<std::string>& answers, const std::string& output) {
  if (answers.empty()) return 0;
  const std::string out = Lower(output);
  int found = 0;
  for (const std::string& a : answers) found += out.find(Lower(a)) != std::string::npos;
  return static_cast<double>(found) / static_cast<double>(answers.size());
}

}  // namespace impress
