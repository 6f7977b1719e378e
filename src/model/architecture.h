// The architectures impress runs, one table: each row is what a new
// architecture adds (docs/design.md, "A new architecture"): the config.json
// `model_type` it answers to, how its own config fields are read after the
// common ones, what `impress info` reports about them, and its factory. One
// file per architecture (opt.cc, llama.cc) defines the three functions;
// architecture.cc lists the rows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/config.h"
#include "model/config_reader.h"

namespace impress {

class Model;
class WeightLoader;

using ModelFactory = StatusOr<std::unique_ptr<Model>> (*)(const ModelConfig& config, const WeightLoader& weights);

struct Architecture {
  const char* model_type;
  // Reads the architecture's fields into `c` (the common ones are read).
  Status (*parse_config)(ConfigReader& r, ModelConfig* c);
  // Adds the architecture's own fields to `impress info`'s record.
  void (*describe)(const ModelConfig& c, nlohmann::ordered_json* info);
  ModelFactory create;
};

const std::vector<Architecture>& Architectures();
const Architecture* FindArchitecture(const std::string& model_type);  // nullptr: not one of them
std::string ArchitectureNames();                                      // "opt, llama"

}  // namespace impress
