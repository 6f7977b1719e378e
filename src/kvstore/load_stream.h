// The load side of FlexGen's streams. On CUDA, the prefix KV a read-ahead
// brings to the device is copied on a stream of its own, each layer's read
// ends with an event, and the compute stream waits on that event: the host
// never waits for a copy. Reads that run on the compute thread (what a
// selection needs after it has chosen) stay on the compute stream, ordered
// after the kernels that chose.
//
// Contract for the data path on CUDA: the only host synchronisation is the
// selection's small index read-back (the chosen chunks must reach the CPU to
// be read from disk, select/method.h); copies and their consumers are ordered
// by events alone.
//
// On the CPU every call is a no-op, so the CPU path is the one it was.
#pragma once

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace impress {

class LoadStream {
 public:
  // A stream from LibTorch's pool on a CUDA `device`; inactive elsewhere.
  explicit LoadStream(const c10::Device& device);
  ~LoadStream();
  LoadStream(const LoadStream&) = delete;
  LoadStream& operator=(const LoadStream&) = delete;
  bool active() const { return impl_ != nullptr; }

  // Work this thread issues while the returned guard lives goes to the load stream.
  class Scope {
   public:
    ~Scope();
    Scope(Scope&&) noexcept;
   private:
    friend class LoadStream;
    explicit Scope(std::shared_ptr<void> guard) : guard_(std::move(guard)) {}
    std::shared_ptr<void> guard_;
  };
  Scope Enter() const;

  // A point on the load stream: everything issued on it so far.
  struct Ready {
    std::shared_ptr<void> event;  // null on the CPU
  };
  Ready Record() const;
  // The calling thread's current stream (compute) waits for `r`, on the device.
  void Wait(const Ready& r) const;
  // `t` (made on any stream) is used by the calling thread's current stream:
  // its memory is not reused before that stream is done with it.
  void HandOver(const at::Tensor& t) const;
  // A timing point on the calling thread's current stream (null on the CPU).
  Ready Mark() const;
  // Milliseconds from `a` to `b` on the device; waits for `b`. 0 on the CPU.
  static double Elapsed(const Ready& a, const Ready& b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where a read-ahead kept the load stream busy: one span per burst of device
// work it issued (copies up, promotions, stacking), each from a point just
// before the burst to the point after it, so that the host's own work between
// bursts (reading the disk) is in none. Inactive on the CPU: every call is a no-op.
class DeviceSpans {
 public:
  DeviceSpans() = default;
  explicit DeviceSpans(const LoadStream* stream) : stream_(stream != nullptr && stream->active() ? stream : nullptr) {}
  void Open();   // before a burst (no-op while one is open)
  void Close();  // after it (no-op unless one is open)
  const std::vector<std::pair<LoadStream::Ready, LoadStream::Ready>>& spans() const { return spans_; }

 private:
  const LoadStream* stream_ = nullptr;
  bool open_ = false;
  std::vector<std::pair<LoadStream::Ready, LoadStream::Ready>> spans_;
};

// One layer on the device (CUDA), in ms from the request's first event: the
// read-ahead's busy spans on the load stream (DeviceSpans) and the interval
// from its first span's start to its end, the layer's compute (from the point
// it asked for its prefix KV, after any wait, to the point the next layer
// asked), and how long the compute stream waited for the read.
struct DeviceLayerTimes {
  double load_begin = 0, load_end = 0;
  std::vector<std::pair<double, double>> load_busy;
  // The layer's reads after its selection (on the compute thread and
  // stream): load work that compute waits for, so in neither the compute
  // time nor the hidden share.
  std::vector<std::pair<double, double>> demand_busy;
  double compute_begin = 0, compute_end = 0;
  double wait = 0;
};

// Of the loads' busy time (every layer's read-ahead spans on the load stream
// and its on-demand spans on the compute stream), the milliseconds that
// overlap some layer's compute: its interval less its on-demand spans. Copies
// hidden under compute. `busy_ms` gets the busy time. Pure arithmetic on the
// intervals.
double HiddenLoadMs(const std::vector<DeviceLayerTimes>& layers, double* busy_ms);

// The timing points of one request's layers on the device; nothing on the CPU.
class DeviceTimeline {
 public:
  DeviceTimeline(const LoadStream& stream, int layers);
  // On the load stream (its Scope entered), around layer l's read-ahead. The
  // point after it is the event the layer's user waits for (loaded(l)).
  void LoadBegun(int l) { begin_[l] = stream_.Record(); }
  void LoadDone(int l) { end_[l] = stream_.Record(); }
  // Layer l's read-ahead's busy spans (recorded by the read, on its thread).
  DeviceSpans* spans(int l) { return &spans_[l]; }
  const LoadStream::Ready& loaded(int l) const { return end_[l]; }
  void Asking(int l);  // layer l asks for its prefix KV (before waiting for it)
  void Got(int l);     // ... and has it
  // Per layer, with `demand[l]` (when given) as layer l's on-demand spans.
  // Waits for the device; call once the request's logits are on the host.
  std::vector<DeviceLayerTimes> Collect(const std::vector<DeviceSpans>* demand = nullptr);

 private:
  const LoadStream& stream_;
  LoadStream::Ready base_;
  std::vector<LoadStream::Ready> begin_, end_, asking_, got_;
  std::vector<DeviceSpans> spans_;
};

}  // namespace impress
