// Enums chosen by name on the command line or in a file.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// "a, b, c" (or with another separator: "a,b,c").
inline std::string JoinNames(const std::vector<std::string>& names, const char* sep = ", ") {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) list += (i ? sep : "") + names[i];
  return list;
}

// The E whose value is `name`'s index in `names` (E's enumerators in order).
// Error: "<option>: unknown <what> '<name>' (<names, comma-separated>)".
template <class E>
StatusOr<E> ParseNamed(const std::vector<std::string>& names, const std::string& name, const std::string& option,
                       const std::string& what) {
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) return static_cast<E>(i);
  return Status::InvalidArgument(option + ": unknown " + what + " '" + name + "' (" + JoinNames(names) + ")");
}

// The name of `e` in `names` (E's enumerators in order).
template <class E>
const std::string& NameOf(const std::vector<std::string>& names, E e) {
  return names.at(static_cast<size_t>(e));
}

}  // namespace impress
