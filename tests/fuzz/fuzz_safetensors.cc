// Fuzz target: a safetensors file. Open must either refuse it with an error
// or return views that lie inside the file: every byte of every view is read.
#include <cstdint>

#include "fuzz_input.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = impress::fuzz::WriteFile(impress::fuzz::ScratchDir() + "/model.safetensors", data, size);
  auto file = impress::SafetensorsFile::Open(path);
  if (!file.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& [name, view] : (*file)->tensors()) {
    const auto* bytes = static_cast<const uint8_t*>(view.data);
    for (size_t i = 0; i < view.nbytes; ++i) sink = sink ^ bytes[i];
  }
  return 0;
}
