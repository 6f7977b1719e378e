// Strict reads of integers from JSON that came from a file. nlohmann's
// get<int>() converts a float or an out-of-range number with undefined
// behaviour and a negative number to unsigned by wrapping; these throw
// std::invalid_argument instead, with the offending value in the message.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace impress {

template <typename T>
T GetInteger(const nlohmann::json& j) {
  using Limits = std::numeric_limits<T>;
  // Parsing keeps a non-negative integer as unsigned; built in code it may be signed.
  if (j.is_number_unsigned() && j.get<uint64_t>() <= static_cast<uint64_t>(Limits::max()))
    return static_cast<T>(j.get<uint64_t>());
  if (j.is_number_integer() && !j.is_number_unsigned()) {
    const int64_t v = j.get<int64_t>();
    if (v >= static_cast<int64_t>(Limits::min()) && (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(Limits::max())))
      return static_cast<T>(v);
  }
  throw std::invalid_argument("expected an integer in [" + std::to_string(Limits::min()) + ", " +
                              std::to_string(Limits::max()) + "], got " + j.dump().substr(0, 40));
}

template <typename T>
std::vector<T> GetIntegers(const nlohmann::json& j) {
  if (!j.is_array()) throw std::invalid_argument("expected an array of integers, got " + j.dump().substr(0, 40));
  std::vector<T> out;
  out.reserve(j.size());
  for (const auto& e : j) out.push_back(GetInteger<T>(e));
  return out;
}

}  // namespace impress
