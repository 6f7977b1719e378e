// Fuzz target: a dataset split (JSONL). The first byte picks the task; the
// rest is the file. LoadSplit must return documents or an error, and every
// document it returns must build a prompt.
#include <cstdint>

#include "data/task.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& tasks = impress::Tasks();
  const impress::TaskSpec& task = tasks[data[0] % tasks.size()];
  const std::string path = impress::fuzz::WriteFile(impress::fuzz::ScratchDir() + "/split.jsonl", data + 1, size - 1);
  auto docs = impress::LoadSplit(task, path);
  if (!docs.ok()) return 0;
  for (const impress::Doc& d : *docs) {
    if (d.gold < 0 || d.gold >= static_cast<int>(d.choices.size())) __builtin_trap();  // a gold index must name a choice
    (void)impress::FewShotExample(d);
  }
  (void)impress::BuildPrefix(*docs);
  return 0;
}
