// One read per layer, each startable early on its own thread: Start(l)
// begins layer l's read, Take(l) returns it (reading on the calling thread
// if it was never started). Destruction waits for reads still running, so an
// owner declares it after everything `read` uses.
//
// With an active LoadStream (CUDA), a read started early issues its device
// work on the load stream and ends with an event; Take makes the caller's
// stream wait for that event (on the device, not the host), and the load's
// interval on the load stream is kept for the timeline (LoadTimes).
#pragma once

#include <functional>
#include <future>
#include <vector>

#include <c10/core/InferenceMode.h>

#include "engine/load_stream.h"

namespace impress {

template <class T>
class LayerReads {
 public:
  LayerReads(int layers, std::function<T(int)> read, const LoadStream* stream = nullptr)
      : reads_(layers), begin_(layers), ready_(layers), read_(std::move(read)), stream_(stream) {}
  ~LayerReads() {
    for (size_t l = 0; l < reads_.size(); ++l) {
      if (!reads_[l].valid()) continue;
      reads_[l].wait();
      // A read nobody took may have filled the caches: later users order after it.
      if (stream_ != nullptr) stream_->Wait(ready_[l]);
    }
  }
  LayerReads(const LayerReads&) = delete;
  LayerReads& operator=(const LayerReads&) = delete;
  void Start(int l) {
    if (l >= static_cast<int>(reads_.size()) || reads_[l].valid()) return;
    reads_[l] = std::async(std::launch::async, [this, l] {
      c10::InferenceMode guard;
      if (stream_ == nullptr || !stream_->active()) return read_(l);
      LoadStream::Scope on_load = stream_->Enter();
      begin_[l] = stream_->Record();
      T t = read_(l);
      ready_[l] = stream_->Record();
      return t;
    });
  }
  T Take(int l) {
    if (!reads_[l].valid()) return read_(l);
    T t = reads_[l].get();
    if (stream_ != nullptr) stream_->Wait(ready_[l]);
    return t;
  }
  // Layer l's read on the load stream, from its first to its last device
  // work (null events for reads not started early, and on the CPU). Valid after Take(l).
  std::pair<LoadStream::Ready, LoadStream::Ready> LoadTimes(int l) const { return {begin_[l], ready_[l]}; }

 private:
  std::vector<std::future<T>> reads_;
  std::vector<LoadStream::Ready> begin_, ready_;  // written by layer l's thread, read after its future
  std::function<T(int)> read_;
  const LoadStream* stream_;
};

}  // namespace impress
