// Read-only, memory-mapped access to Hugging Face safetensors files.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {...}}, then the data region; offsets are relative to it.
// Open() validates everything a lying header could get wrong (length past the
// end, offsets past the end or overlapping, byte counts that disagree with the
// shape, unknown dtypes) so that a TensorView never points outside the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

enum class DType { kF32, kF16, kBF16, kI64, kI32, kI8, kU8, kBool, kF64 };

// Bytes per element of `d`.
int DTypeSize(DType d);
// The safetensors spelling ("F32", "BF16", ...).
const char* DTypeName(DType d);

struct TensorView {
  DType dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // valid while the owning file is open
  size_t nbytes = 0;
  const std::string* file = nullptr;  // path of the owning file
};

class SafetensorsFile {
 public:
  // Maps `path` and validates its header. Errors name the file.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

// All tensors of a model directory: model.safetensors, or the shards listed in
// model.safetensors.index.json.
class TensorSet {
 public:
  static StatusOr<std::unique_ptr<TensorSet>> OpenDir(const std::string& dir);

  // nullptr when absent.
  const TensorView* Find(const std::string& name) const;
  std::vector<std::string> Names() const;
  // Sum of tensor bytes on disk.
  size_t TotalBytes() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

}  // namespace impress
