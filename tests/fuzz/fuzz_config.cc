// Fuzz target: a model's config.json. LoadModelConfig must refuse it or give
// a config the model code can size itself from: positive dimensions, query
// heads a multiple of KV heads, a positive head width.
#include <cstdint>

#include "fuzz_input.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = impress::fuzz::WriteFile(impress::fuzz::ScratchDir() + "/config.json", data, size);
  auto c = impress::LoadModelConfig(path);
  if (!c.ok()) return 0;
  if (c->vocab_size <= 0 || c->hidden_size <= 0 || c->num_layers <= 0 || c->num_heads <= 0 || c->num_kv_heads <= 0 ||
      c->num_heads % c->num_kv_heads != 0 || c->head_dim <= 0 || c->intermediate_size < 0 || c->max_positions < 0)
    __builtin_trap();
  return 0;
}
