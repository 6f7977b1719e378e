#include "engine/load_stream.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

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

DeviceTimeline::DeviceTimeline(const LoadStream& stream, int layers)
    : stream_(stream), base_(stream.Mark()), begin_(layers), end_(layers), asking_(layers), got_(layers) {}

void DeviceTimeline::Asking(int l) {
  if (stream_.active()) asking_[l] = stream_.Mark();
}

void DeviceTimeline::Got(int l) {
  if (stream_.active()) got_[l] = stream_.Mark();
}

std::vector<DeviceLayerTimes> DeviceTimeline::Collect() {
  std::vector<DeviceLayerTimes> out;
  if (!stream_.active()) return out;
  const LoadStream::Ready end = stream_.Mark();
  for (size_t l = 0; l < got_.size(); ++l) {
    DeviceLayerTimes t;
    t.load_begin = LoadStream::Elapsed(base_, begin_[l]);
    t.load_end = LoadStream::Elapsed(base_, end_[l]);
    t.compute_begin = LoadStream::Elapsed(base_, got_[l]);
    t.compute_end = LoadStream::Elapsed(base_, l + 1 < asking_.size() && asking_[l + 1].event ? asking_[l + 1] : end);
    t.wait = LoadStream::Elapsed(asking_[l], got_[l]);
    out.push_back(t);
  }
  return out;
}

}  // namespace impress
