// One emulated link of a fixed bandwidth shared by every thread: each
// transfer is given the link's next free interval and waits until it ends,
// with no lock held while it waits. Used to emulate a slower disk (the paced
// Env) and a host-to-device copy (the tiered cache).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <thread>

namespace impress {

class Pacer {
 public:
  // REQUIRES: bytes_per_second > 0
  explicit Pacer(double bytes_per_second) : rate_(bytes_per_second) {}
  void Wait(size_t bytes) {
    using clock = std::chrono::steady_clock;
    const double now = std::chrono::duration<double>(clock::now().time_since_epoch()).count();
    double until;
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_at_ = std::max(free_at_, now) + bytes / rate_;
      until = free_at_;
    }
    if (until > now) std::this_thread::sleep_for(std::chrono::duration<double>(until - now));
  }

 private:
  double rate_;
  std::mutex mu_;
  double free_at_ = 0;  // seconds on the steady clock when the link is next free
};

}  // namespace impress
