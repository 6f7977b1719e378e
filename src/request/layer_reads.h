// One read per layer, each startable early on its own thread: Start(l)
// begins layer l's read, Take(l) returns it (reading on the calling thread
// if it was never started). Destruction waits for reads still running, so an
// owner declares it after everything `read` uses.
//
// With an active LoadStream (CUDA), a read started early issues its device
// work on the load stream and ends with an event; Take makes the caller's
// stream wait for that event (on the device, not the host). The layers'
// device intervals are kept (DeviceTimes).
#pragma once

#include <functional>
#include <future>
#include <vector>

#include <c10/core/InferenceMode.h>

#include "kvstore/load_stream.h"

namespace impress {

template <class T>
class LayerReads {
 public:
  // `read(l, spans)` reads layer l, opening and closing `spans` around its
  // bursts of device work when it runs early on the load stream (else null).
  LayerReads(int layers, std::function<T(int, DeviceSpans*)> read, const LoadStream& stream)
      : reads_(layers), read_(std::move(read)), stream_(stream), timeline_(stream, layers) {}
  ~LayerReads() {
    for (size_t l = 0; l < reads_.size(); ++l) {
      if (!reads_[l].valid()) continue;
      reads_[l].wait();
      // A read nobody took may have filled the caches: later users order after it.
      stream_.Wait(timeline_.loaded(static_cast<int>(l)));
    }
  }
  LayerReads(const LayerReads&) = delete;
  LayerReads& operator=(const LayerReads&) = delete;
  void Start(int l) {
    if (l >= static_cast<int>(reads_.size()) || reads_[l].valid()) return;
    reads_[l] = std::async(std::launch::async, [this, l] {
      c10::InferenceMode guard;
      if (!stream_.active()) return read_(l, nullptr);
      LoadStream::Scope on_load = stream_.Enter();
      timeline_.LoadBegun(l);  // written by layer l's thread, read after its future
      T t = read_(l, timeline_.spans(l));
      timeline_.LoadDone(l);
      return t;
    });
  }
  bool Started(int l) const { return reads_[l].valid(); }
  T Take(int l) {
    timeline_.Asking(l);
    T t = reads_[l].valid() ? reads_[l].get() : read_(l, nullptr);
    stream_.Wait(timeline_.loaded(l));  // nothing to wait for when read here, or on the CPU
    timeline_.Got(l);
    return t;
  }
  // CUDA: the layers' device intervals; call once the request's logits are on the host.
  // `demand[l]`: layer l's reads made after it was taken (DeviceTimeline::Collect).
  std::vector<DeviceLayerTimes> DeviceTimes(const std::vector<DeviceSpans>* demand = nullptr) {
    return timeline_.Collect(demand);
  }

 private:
  std::vector<std::future<T>> reads_;
  std::function<T(int, DeviceSpans*)> read_;
  const LoadStream& stream_;
  DeviceTimeline timeline_;
};

}  // namespace impress
