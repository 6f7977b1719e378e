// Fetches named tensors from a TensorSet, checks their shapes against what the
// config implies, and converts them to the compute device and dtype.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "model/safetensors.h"

namespace impress {

class WeightLoader {
 public:
  WeightLoader(const std::string& dir, const TensorSet& set, at::Device device, at::ScalarType dtype)
      : dir_(dir), set_(set), device_(device), dtype_(dtype) {}

  // The tensor `name` with exactly `shape`; an error names the file, the
  // tensor, and both shapes.
  StatusOr<at::Tensor> Get(const std::string& name, const std::vector<int64_t>& shape) const;
  // Like Get, but an absent tensor gives an undefined tensor.
  StatusOr<at::Tensor> Optional(const std::string& name, const std::vector<int64_t>& shape) const;
  bool Has(const std::string& name) const { return set_.Find(name) != nullptr; }
  const std::string& dir() const { return dir_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

 private:
  std::string dir_;
  const TensorSet& set_;
  at::Device device_;
  at::ScalarType dtype_;
};

}  // namespace impress
