// impress generate --model DIR --prompt TEXT -n N: greedy decoding.
#include <ATen/ATen.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct GenerateOptions {
  std::string model;
  std::string prompt;
  int max_new_tokens = 32;
  bool ids = false;
  bool ignore_eos = false;
  RuntimeFlags runtime;
};

int RunGenerate(const GenerateOptions& o) {
  ApplyRuntimeFlags(o.runtime);
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto prompt = (*tok)->Encode(o.prompt);
  if (!prompt.ok()) return Fail(prompt.status().WithContext("--prompt"));
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());
  Model& m = **model;
  Status valid = ValidateTokens(m.config(), *prompt, o.max_new_tokens);
  if (!valid.ok()) return Fail(valid.WithContext("--prompt with -n " + std::to_string(o.max_new_tokens)));

  DenseKvCache cache(m.config().num_layers);
  std::vector<int32_t> out;
  std::vector<int32_t> step = *prompt;
  int64_t pos = 0;
  for (int i = 0; i < o.max_new_tokens; ++i) {
    at::Tensor logits = m.Forward(step, pos, cache);
    pos += static_cast<int64_t>(step.size());
    int32_t next = static_cast<int32_t>(logits[0].argmax().item<int64_t>());
    if (!o.ignore_eos && next == m.config().eos_token_id) break;
    out.push_back(next);
    step = {next};
  }
  if (o.ids) std::cout << nlohmann::json(out).dump() << "\n";
  else std::cout << (*tok)->Decode(out) << "\n";
  return 0;
}

}  // namespace

void AddGenerateCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Greedy continuation of a prompt");
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  cmd->add_option("--prompt", o->prompt, "prompt text (tokenized with the model's special tokens)")->required();
  cmd->add_option("-n,--max-new-tokens", o->max_new_tokens, "tokens to generate")->check(PositiveNumber());
  cmd->add_flag("--ids", o->ids, "print the generated token ids as JSON instead of text");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating past the end-of-sequence token");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunGenerate(*o); }});
}

}  // namespace impress
