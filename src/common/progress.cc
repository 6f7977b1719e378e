#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace impress {

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_() {}

Progress::~Progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void Progress::Update(int64_t done) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const int width = 30;
  int filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
  double secs = std::chrono::duration<double>(now - start_).count();
  double eta = done > 0 ? secs * (total_ - done) / done : 0;
  std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld %.0fs eta %.0fs", label_.c_str(), filled,
               "##############################", width - filled, "", static_cast<long long>(done),
               static_cast<long long>(total_), secs, eta);
  std::fflush(stderr);
}

}  // namespace impress
