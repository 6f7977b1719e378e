#include "model/config.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "model/architecture.h"
#include "model/config_reader.h"

namespace impress {

StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  ModelConfig c;
  ConfigReader r(path, j);
  RETURN_IF_ERROR(r.String("model_type", &c.model_type));
  if (c.model_type.empty()) return Status::InvalidArgument(path + ": missing field 'model_type'");
  RETURN_IF_ERROR(r.Int("vocab_size", &c.vocab_size, true));
  RETURN_IF_ERROR(r.Int("hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(r.Int("num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(r.Int("num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(r.Int("bos_token_id", &c.bos_token_id, false));
  RETURN_IF_ERROR(r.Int("eos_token_id", &c.eos_token_id, false));
  RETURN_IF_ERROR(r.Bool("tie_word_embeddings", &c.tie_word_embeddings));
  RETURN_IF_ERROR(r.String("torch_dtype", &c.torch_dtype));
  if (c.torch_dtype.empty()) RETURN_IF_ERROR(r.String("dtype", &c.torch_dtype));
  if (c.vocab_size == 0 || c.hidden_size == 0 || c.num_layers == 0 || c.num_heads == 0)
    return Status::InvalidArgument(path + ": vocab_size, hidden_size, num_hidden_layers and num_attention_heads must be positive");
  const Architecture* arch = FindArchitecture(c.model_type);
  if (arch == nullptr)
    return Status::InvalidArgument(path + ": unknown architecture model_type '" + c.model_type + "' (supported: " +
                                   ArchitectureNames() + ")");
  RETURN_IF_ERROR(arch->parse_config(r, &c));
  c.head_dim = c.hidden_size / c.num_heads;
  RETURN_IF_ERROR(r.Int("head_dim", &c.head_dim, false));
  if (c.head_dim == 0) return Status::InvalidArgument(path + ": head_dim must be positive");
  return c;
}

}  // namespace impress
