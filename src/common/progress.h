// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <string>

namespace impress {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();  // ends the line
  void Update(int64_t done);

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace impress
