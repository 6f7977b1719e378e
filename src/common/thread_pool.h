// A fixed set of worker threads running submitted tasks (the store's I/O queue,
// the next layer's prefetch).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace impress {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();  // finishes queued tasks, then joins
  void Submit(std::function<void()> task);
  // Runs every task of `tasks` on the pool and returns when all are done.
  void RunAll(std::vector<std::function<void()>> tasks);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace impress
