// A mutex that knows whether the calling thread holds it, so that code and
// tests can check that nothing slow (an fsync, a network round trip) runs
// under it. Meets BasicLockable: use it with std::lock_guard.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace impress {

class OwnedMutex {
 public:
  void lock() {
    mu_.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  void unlock() {
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    mu_.unlock();
  }
  // True when this thread holds it (exact for the calling thread).
  bool HeldByMe() const { return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

 private:
  std::mutex mu_;
  std::atomic<std::thread::id> owner_{};
};

}  // namespace impress
