#include "common/thread_pool.h"

#include <atomic>

namespace impress {

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < threads; ++i)
    workers_.emplace_back([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
          if (queue_.empty()) return;
          task = std::move(queue_.front());
          queue_.pop_front();
        }
        task();
      }
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::RunAll(std::vector<std::function<void()>> tasks) {
  if (tasks.empty()) return;
  std::mutex done_mu;
  std::condition_variable done_cv;
  size_t remaining = tasks.size();
  for (auto& t : tasks)
    Submit([&, task = std::move(t)] {
      task();
      std::lock_guard<std::mutex> lock(done_mu);
      if (--remaining == 0) done_cv.notify_one();
    });
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return remaining == 0; });
}

}  // namespace impress
