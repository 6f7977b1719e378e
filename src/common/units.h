// Sizes on the command line and percentiles in reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

// "4096", "64K", "512M", "10G", "1.5G" (binary multiples) -> bytes.
StatusOr<int64_t> ParseBytes(const std::string& s);
// Nearest-rank percentile, q in [0, 100]; 0 for an empty sample.
double Percentile(std::vector<double> v, double q);
double Mean(const std::vector<double>& v);

}  // namespace impress
