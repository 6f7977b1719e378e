// Reading a file of one JSON object a line (the task splits, task files).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace impress {

// Calls `fn` with each non-empty line's object and its 1-based line number.
// Errors name "<path>:<line>: " and the problem (invalid UTF-8, not valid
// JSON, not a JSON object, or what `fn` returns); a file that cannot be
// opened is NotFound, "<path>: cannot open" and `hint` after it.
Status ForEachJsonLine(const std::string& path, const std::string& hint,
                       const std::function<Status(const nlohmann::json&, int)>& fn);

}  // namespace impress
