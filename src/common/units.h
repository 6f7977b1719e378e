// Sizes on the command line, percentiles in reports and printf into a string.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// "4096", "64K", "512M", "10G", "1.5G" (binary multiples) -> bytes.
StatusOr<int64_t> ParseBytes(const std::string& s);
// The inverse: `bytes` in the largest of K, M, G, T that divides it
// ("64M", "1536K", "0"), so that ParseBytes gives it back exactly.
// REQUIRES: bytes >= 0.
std::string BytesText(int64_t bytes);
// Nearest-rank percentile, q in [0, 100]; 0 for an empty sample.
double Percentile(std::vector<double> v, double q);
double Mean(const std::vector<double>& v);

// printf's output as a string (a report's cell, or a run of them).
template <typename... Args>
std::string Fmt(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}

}  // namespace impress
