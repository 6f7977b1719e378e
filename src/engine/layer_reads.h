// One read per layer, each startable early on its own thread: Start(l)
// begins layer l's read, Take(l) returns it (reading on the calling thread
// if it was never started). Destruction waits for reads still running, so an
// owner declares it after everything `read` uses.
#pragma once

#include <functional>
#include <future>
#include <vector>

#include <c10/core/InferenceMode.h>

namespace impress {

template <class T>
class LayerReads {
 public:
  LayerReads(int layers, std::function<T(int)> read) : reads_(layers), read_(std::move(read)) {}
  ~LayerReads() {
    for (auto& f : reads_)
      if (f.valid()) f.wait();
  }
  LayerReads(const LayerReads&) = delete;
  LayerReads& operator=(const LayerReads&) = delete;
  void Start(int l) {
    if (l >= static_cast<int>(reads_.size()) || reads_[l].valid()) return;
    reads_[l] = std::async(std::launch::async, [this, l] {
      c10::InferenceMode guard;
      return read_(l);
    });
  }
  T Take(int l) { return reads_[l].valid() ? reads_[l].get() : read_(l); }

 private:
  std::vector<std::future<T>> reads_;
  std::function<T(int)> read_;
};

}  // namespace impress
