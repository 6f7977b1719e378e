// The one clock that request timing reads, and milliseconds between two of its points.
#pragma once

#include <chrono>

namespace impress {

using Clock = std::chrono::steady_clock;
inline double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace impress
