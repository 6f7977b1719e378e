#include "kvstore/reorder_worker.h"

#include <ATen/ATen.h>

#include <chrono>

namespace impress {

ReorderWorker::ReorderWorker(PrefixStore& store, const ReorderWorkerOptions& opt)
    : store_(store), opt_(opt), thread_([this] { Loop(); }) {}

ReorderWorker::~ReorderWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ReorderWorker::Trigger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    asked_ = true;
  }
  cv_.notify_all();
}

void ReorderWorker::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return stop_ || (!asked_ && !running_); });
}

ReorderStats ReorderWorker::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status ReorderWorker::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

int64_t ReorderWorker::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

void ReorderWorker::Loop() {
  c10::InferenceMode guard;
  std::unique_lock<std::mutex> lock(mu_);
  const auto period = std::chrono::duration<double>(opt_.period_seconds);
  while (true) {
    auto ready = [this] { return stop_ || asked_; };
    if (opt_.period_seconds > 0) {
      if (!cv_.wait_for(lock, period, ready)) asked_ = true;
    } else {
      cv_.wait(lock, ready);
    }
    if (stop_) break;
    asked_ = false;
    if (!status_.ok()) {
      cv_.notify_all();
      continue;
    }
    running_ = true;
    lock.unlock();
    ReorderStats pass;
    Status s = store_.Reorder(opt_.reorder, &pass);
    lock.lock();
    running_ = false;
    passes_++;
    stats_.nodes_examined += pass.nodes_examined;
    stats_.nodes_reordered += pass.nodes_reordered;
    stats_.chunks_written += pass.chunks_written;
    stats_.chunks_recached += pass.chunks_recached;
    stats_.bytes_read += pass.bytes_read;
    stats_.bytes_written += pass.bytes_written;
    stats_.bytes_freed += pass.bytes_freed;
    stats_.log_bytes_dropped += pass.log_bytes_dropped;
    stats_.housekeeping_failures += pass.housekeeping_failures;
    if (status_.ok()) status_ = s;
    cv_.notify_all();
  }
  running_ = false;
  cv_.notify_all();
}

}  // namespace impress
