// Runs PrefixStore::Reorder off the request path: on a period, or when
// triggered, on its own thread. Requests keep running meanwhile.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "kvstore/prefix_store.h"

namespace impress {

struct ReorderWorkerOptions {
  double period_seconds = 0;  // reorder this often (0: only when triggered)
  ReorderOptions reorder;
};

class ReorderWorker {
 public:
  ReorderWorker(PrefixStore& store, const ReorderWorkerOptions& opt);
  ~ReorderWorker();  // finishes a reorder in progress, then stops

  // Asks for a reorder soon; does not wait. Triggers while one runs merge into one more.
  void Trigger();
  // Waits until no reorder is running or asked for.
  void Drain();
  // Totals over every reorder so far, and the first error (reordering stops after one).
  ReorderStats stats() const;
  Status status() const;
  int64_t passes() const;

 private:
  void Loop();

  PrefixStore& store_;
  ReorderWorkerOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool asked_ = false, running_ = false, stop_ = false;
  ReorderStats stats_;
  Status status_;
  int64_t passes_ = 0;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace impress
