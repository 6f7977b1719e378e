#include "common/device_copy.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace impress {

bool OnDevice(const at::Tensor& t, const c10::Device& device) {
  const c10::Device d = t.device();
  return d.type() == device.type() && (!device.has_index() || d.index() == device.index());
}

at::Tensor ToDevice(const at::Tensor& t, const c10::Device& device) {
  if (!t.defined() || OnDevice(t, device)) return t;
  if (!device.is_cuda() || !t.is_cpu()) return t.to(device);
  // A pageable source would make the copy wait for the stream's earlier work.
  const at::Tensor pinned = t.is_pinned() ? t : t.pin_memory();
  return pinned.to(device, /*non_blocking=*/true);
}

std::shared_ptr<void> StreamPoint(const c10::Device& device) {
  if (!device.is_cuda()) return nullptr;
  auto e = std::make_shared<at::cuda::CUDAEvent>();
  e->record(c10::cuda::getCurrentCUDAStream(device.index()));
  return e;
}

at::Tensor ToHostNow(const at::Tensor& t) { return t.is_cpu() ? t : t.to(at::kCPU); }

}  // namespace impress
