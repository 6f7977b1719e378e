#include "kvstore/load_stream.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

namespace impress {

struct LoadStream::Impl {
  c10::cuda::CUDAStream stream;
};

LoadStream::LoadStream(const c10::Device& device) {
  if (device.is_cuda()) impl_.reset(new Impl{c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())});
}

LoadStream::~LoadStream() = default;
LoadStream::Scope::~Scope() = default;
LoadStream::Scope::Scope(Scope&&) noexcept = default;

LoadStream::Scope LoadStream::Enter() const {
  if (!impl_) return Scope(nullptr);
  return Scope(std::make_shared<c10::cuda::CUDAStreamGuard>(impl_->stream));
}

LoadStream::Ready LoadStream::Record() const {
  if (!impl_) return {};
  auto e = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);  // timed: the timeline reads it
  e->record(impl_->stream);
  return {e};
}

LoadStream::Ready LoadStream::Mark() const {
  if (!impl_) return {};
  auto e = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);
  e->record(c10::cuda::getCurrentCUDAStream(impl_->stream.device_index()));
  return {e};
}

double LoadStream::Elapsed(const Ready& a, const Ready& b) {
  if (!a.event || !b.event) return 0;
  auto* eb = static_cast<at::cuda::CUDAEvent*>(b.event.get());
  eb->synchronize();
  return static_cast<at::cuda::CUDAEvent*>(a.event.get())->elapsed_time(*eb);
}

void LoadStream::Wait(const Ready& r) const {
  if (!impl_ || !r.event) return;
  static_cast<at::cuda::CUDAEvent*>(r.event.get())->block(c10::cuda::getCurrentCUDAStream(impl_->stream.device_index()));
}

void LoadStream::HandOver(const at::Tensor& t) const {
  if (!impl_ || !t.defined() || !t.is_cuda()) return;
  t.record_stream(c10::cuda::getCurrentCUDAStream(impl_->stream.device_index()));
}

void DeviceSpans::Open() {
  if (stream_ == nullptr || open_) return;
  spans_.push_back({stream_->Mark(), {}});
  open_ = true;
}

void DeviceSpans::Close() {
  if (stream_ == nullptr || !open_) return;
  spans_.back().second = stream_->Mark();
  open_ = false;
}

namespace {

using Spans = std::vector<std::pair<double, double>>;

double Overlap(double b0, double e0, double b1, double e1) { return std::max(0.0, std::min(e0, e1) - std::max(b0, b1)); }

}  // namespace

double HiddenLoadMs(const std::vector<DeviceLayerTimes>& layers, double* busy_ms) {
  double busy = 0, hidden = 0;
  for (const DeviceLayerTimes& l : layers) {
    for (const auto& [b, e] : l.demand_busy) busy += std::max(0.0, e - b);
    for (const auto& [b, e] : l.load_busy) {
      busy += std::max(0.0, e - b);
      // Compute intervals do not overlap each other, nor a layer's on-demand spans each other.
      for (const DeviceLayerTimes& c : layers) {
        hidden += Overlap(b, e, c.compute_begin, c.compute_end);
        for (const auto& [db, de] : c.demand_busy)
          hidden -= Overlap(std::max(b, c.compute_begin), std::min(e, c.compute_end), db, de);
      }
    }
  }
  *busy_ms = busy;
  return std::max(0.0, hidden);
}

DeviceTimeline::DeviceTimeline(const LoadStream& stream, int layers)
    : stream_(stream), base_(stream.Mark()), begin_(layers), end_(layers), asking_(layers), got_(layers) {
  for (int l = 0; l < layers; ++l) spans_.emplace_back(&stream);
}

void DeviceTimeline::Asking(int l) {
  if (stream_.active()) asking_[l] = stream_.Mark();
}

void DeviceTimeline::Got(int l) {
  if (stream_.active()) got_[l] = stream_.Mark();
}

std::vector<DeviceLayerTimes> DeviceTimeline::Collect(const std::vector<DeviceSpans>* demand) {
  std::vector<DeviceLayerTimes> out;
  if (!stream_.active()) return out;
  const LoadStream::Ready end = stream_.Mark();
  for (size_t l = 0; l < got_.size(); ++l) {
    DeviceLayerTimes t;
    for (const auto& [b, e] : spans_[l].spans())
      if (e.event) t.load_busy.push_back({LoadStream::Elapsed(base_, b), LoadStream::Elapsed(base_, e)});
    if (demand != nullptr && l < demand->size())
      for (const auto& [b, e] : (*demand)[l].spans())
        if (e.event) t.demand_busy.push_back({LoadStream::Elapsed(base_, b), LoadStream::Elapsed(base_, e)});
    t.load_begin = t.load_busy.empty() ? LoadStream::Elapsed(base_, begin_[l]) : t.load_busy.front().first;
    t.load_end = LoadStream::Elapsed(base_, end_[l]);
    t.compute_begin = LoadStream::Elapsed(base_, got_[l]);
    t.compute_end = LoadStream::Elapsed(base_, l + 1 < asking_.size() && asking_[l + 1].event ? asking_[l + 1] : end);
    t.wait = LoadStream::Elapsed(asking_[l], got_[l]);
    out.push_back(t);
  }
  return out;
}

}  // namespace impress
