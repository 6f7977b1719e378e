#include "data/jsonl.h"

#include <fstream>

#include "common/utf8.h"

namespace impress {

Status ForEachJsonLine(const std::string& path, const std::string& hint,
                       const std::function<Status(const nlohmann::json&, int)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open" + hint);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    auto where = [&](const std::string& what) {
      return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": " + what);
    };
    if (line.empty()) continue;
    if (!ValidUtf8(line)) return where("invalid UTF-8");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      return where(std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) return where("not a JSON object");
    Status s = fn(j, lineno);
    if (!s.ok()) return where(s.message());
  }
  return Status::OK();
}

}  // namespace impress
