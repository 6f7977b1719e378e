// Fuzz target: a tokenizer.json. FromFile must refuse it or give a tokenizer
// that encodes and decodes without crashing; encoded ids must be below
// vocab_size().
#include <cstdint>

#include "fuzz_input.h"
#include "model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = impress::fuzz::WriteFile(impress::fuzz::ScratchDir() + "/tokenizer.json", data, size);
  auto tok = impress::Tokenizer::FromFile(path);
  if (!tok.ok()) return 0;
  for (const char* text : {"Hello world", " The  cat's 12 <s> é\xe2\x80\x94x\n\n", ""}) {
    for (bool special : {true, false}) {
      auto ids = (*tok)->Encode(text, special);
      if (!ids.ok()) continue;
      for (int32_t id : *ids)
        if (id < 0 || id >= (*tok)->vocab_size()) __builtin_trap();
      (void)(*tok)->Decode(*ids);
    }
  }
  (void)(*tok)->Decode({0, 1, -1, 1 << 30});
  return 0;
}
