#include "common/units.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace impress {

StatusOr<int64_t> ParseBytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 0 || !std::isfinite(v)) return Status::InvalidArgument("'" + s + "' is not a size");
  std::string unit(end);
  double mult = 1;
  if (unit == "K" || unit == "KB" || unit == "KiB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") return Status::InvalidArgument("'" + s + "': unknown unit '" + unit + "' (K, M, G, T)");
  return static_cast<int64_t>(v * mult);
}

std::string BytesText(int64_t bytes) {
  IMPRESS_CHECK(bytes >= 0);
  static const char kUnits[] = {'T', 'G', 'M', 'K'};
  for (int i = 0; i < 4; ++i) {
    const int64_t unit = int64_t{1} << (10 * (4 - i));
    if (bytes > 0 && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * v.size()));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

}  // namespace impress
