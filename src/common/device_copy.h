// Copies between host memory and the compute device on the CUDA data path's
// terms (kvstore/load_stream.h): a copy up never makes the host wait, and a
// read-back to the host is the one kind of host synchronisation, made only
// where a caller names it (select/method.h, ReadBack). On the CPU both
// return their argument: the CPU path is the one it was.
#pragma once

#include <memory>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace impress {

// Whether `t` is on `device`; a CUDA device without an index names the current one.
bool OnDevice(const at::Tensor& t, const c10::Device& device);

// `t` on `device`. From host memory to CUDA the copy is made from pinned
// memory (`t` itself when pinned, else a pinned copy) and only enqueued on
// the current stream; the host does not wait for it.
at::Tensor ToDevice(const at::Tensor& t, const c10::Device& device);

// On CUDA, an event after everything issued so far on the current stream of
// `device` (a CUDAEvent, for whoever must order after it); null elsewhere.
std::shared_ptr<void> StreamPoint(const c10::Device& device);

// `t` in host memory; from CUDA the host waits for the current stream.
at::Tensor ToHostNow(const at::Tensor& t);

}  // namespace impress
