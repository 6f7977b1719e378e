// impress info --model DIR [--json]: what a model directory holds.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/architecture.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct InfoOptions {
  std::string model;
  bool json = false;
};

int RunInfo(const InfoOptions& o) {
  auto config = LoadModelConfig(o.model + "/config.json");
  if (!config.ok()) return Fail(config.status());
  auto tensors = TensorSet::OpenDir(o.model);
  if (!tensors.ok()) return Fail(tensors.status());
  const ModelConfig& c = *config;
  int64_t params = 0;
  std::map<std::string, int64_t> dtypes;
  for (const auto& name : (*tensors)->Names()) {
    const TensorView* v = (*tensors)->Find(name);
    int64_t n = 1;
    for (int64_t d : v->shape) n *= d;
    params += n;
    dtypes[DTypeName(v->dtype)] += n;
  }
  std::string weight_dtype;
  for (const auto& [d, n] : dtypes) weight_dtype += (weight_dtype.empty() ? "" : "+") + d;
  nlohmann::ordered_json j = {
      {"model", o.model},
      {"architecture", c.model_type},
      {"layers", c.num_layers},
      {"hidden_size", c.hidden_size},
      {"heads", c.num_heads},
      {"kv_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"intermediate_size", c.intermediate_size},
      {"vocab_size", c.vocab_size},
      {"max_positions", c.max_positions},
      {"parameters", params},
      {"weight_bytes", (*tensors)->TotalBytes()},
      {"weight_dtype", weight_dtype},
      {"kv_bytes_per_token", {{"float16", c.KvBytesPerToken(2)}, {"float32", c.KvBytesPerToken(4)}}},
  };
  FindArchitecture(c.model_type)->describe(c, &j);  // LoadModelConfig accepts only the table's types
  PrintRecord(j, o.json);
  return 0;
}

}  // namespace

void AddInfoCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Architecture, sizes and KV bytes per token of a model directory");
  cmd->add_option("--model", o->model, "Hugging Face model directory (config.json, *.safetensors)")->required();
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  commands->push_back({cmd, [o] { return RunInfo(*o); }});
}

}  // namespace impress
