#include "model/weights.h"

#include <cstring>

#include <ATen/ATen.h>

namespace impress {
namespace {

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

StatusOr<at::Tensor> WeightLoader::Optional(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView* v = set_.Find(name);
  if (v == nullptr) return at::Tensor();
  if (v->shape != shape)
    return Status::InvalidArgument(*v->file + ": tensor '" + name + "' has shape " + ShapeString(v->shape) +
                         " but config.json implies " + ShapeString(shape));
  at::ScalarType st;
  switch (v->dtype) {
    case DType::kF32: st = at::kFloat; break;
    case DType::kF16: st = at::kHalf; break;
    case DType::kBF16: st = at::kBFloat16; break;
    default:
      return Status::InvalidArgument(*v->file + ": tensor '" + name + "' has dtype " + DTypeName(v->dtype) +
                           ", not a floating-point weight type (F32, F16, BF16)");
  }
  // from_blob does not own the mapping; the copy below does. The format does
  // not promise aligned data (real files pad their header, hand-made ones
  // may not): a misaligned tensor is first copied byte-wise.
  const auto opts = at::TensorOptions().dtype(st);
  at::Tensor view;
  if (reinterpret_cast<uintptr_t>(v->data) % c10::elementSize(st) == 0) {
    view = at::from_blob(const_cast<void*>(v->data), shape, opts);
  } else {
    view = at::empty(shape, opts);
    std::memcpy(view.data_ptr(), v->data, v->nbytes);
  }
  return view.to(at::TensorOptions().device(device_).dtype(dtype_), /*non_blocking=*/false, /*copy=*/true);
}

StatusOr<at::Tensor> WeightLoader::Get(const std::string& name, const std::vector<int64_t>& shape) const {
  ASSIGN_OR_RETURN(at::Tensor t, Optional(name, shape));
  if (!t.defined()) return Status::InvalidArgument(dir_ + ": safetensors hold no tensor '" + name + "'");
  return t;
}

}  // namespace impress
