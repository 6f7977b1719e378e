#include "model/config.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace impress {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(const std::string& path, const json& j) : path_(path), j_(j) {}

  Status Int(const char* key, int* out, bool required) {
    if (!j_.contains(key) || j_[key].is_null()) {
      return required ? Status::InvalidArgument(path_ + ": missing field '" + key + "'") : Status::OK();
    }
    if (!j_[key].is_number_integer()) return Status::InvalidArgument(path_ + ": field '" + key + "' is not an integer");
    long long v = j_[key].get<long long>();
    if (v < 0 || v > (1ll << 31) - 1) return Status::InvalidArgument(path_ + ": field '" + key + "' is out of range");
    *out = static_cast<int>(v);
    return Status::OK();
  }
  Status Double(const char* key, double* out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::OK();
    if (!j_[key].is_number()) return Status::InvalidArgument(path_ + ": field '" + key + "' is not a number");
    *out = j_[key].get<double>();
    return Status::OK();
  }
  Status Bool(const char* key, bool* out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::OK();
    if (!j_[key].is_boolean()) return Status::InvalidArgument(path_ + ": field '" + key + "' is not a boolean");
    *out = j_[key].get<bool>();
    return Status::OK();
  }
  Status String(const char* key, std::string* out) {
    if (!j_.contains(key) || j_[key].is_null()) return Status::OK();
    if (!j_[key].is_string()) return Status::InvalidArgument(path_ + ": field '" + key + "' is not a string");
    *out = j_[key].get<std::string>();
    return Status::OK();
  }

 private:
  const std::string& path_;
  const json& j_;
};

Status ParseOpt(const std::string& path, Reader& r, ModelConfig* c) {
  RETURN_IF_ERROR(r.Int("ffn_dim", &c->intermediate_size, true));
  RETURN_IF_ERROR(r.Int("max_position_embeddings", &c->max_positions, true));
  c->word_embed_proj_dim = c->hidden_size;
  RETURN_IF_ERROR(r.Int("word_embed_proj_dim", &c->word_embed_proj_dim, false));
  RETURN_IF_ERROR(r.Bool("do_layer_norm_before", &c->do_layer_norm_before));
  RETURN_IF_ERROR(r.Bool("enable_bias", &c->enable_bias));
  RETURN_IF_ERROR(r.Bool("layer_norm_elementwise_affine", &c->layer_norm_elementwise_affine));
  RETURN_IF_ERROR(r.Bool("_remove_final_layer_norm", &c->remove_final_layer_norm));
  RETURN_IF_ERROR(r.String("activation_function", &c->activation));
  if (c->activation != "relu" && c->activation != "gelu")
    return Status::InvalidArgument(path + ": activation_function '" + c->activation + "' is not supported (relu, gelu)");
  c->num_kv_heads = c->num_heads;
  return Status::OK();
}

Status ParseLlama(const std::string& path, const json& j, Reader& r, ModelConfig* c) {
  RETURN_IF_ERROR(r.Int("intermediate_size", &c->intermediate_size, true));
  RETURN_IF_ERROR(r.Int("max_position_embeddings", &c->max_positions, true));
  c->num_kv_heads = c->num_heads;
  RETURN_IF_ERROR(r.Int("num_key_value_heads", &c->num_kv_heads, false));
  RETURN_IF_ERROR(r.Double("rms_norm_eps", &c->rms_norm_eps));
  RETURN_IF_ERROR(r.Bool("attention_bias", &c->attention_bias));
  RETURN_IF_ERROR(r.Bool("mlp_bias", &c->mlp_bias));
  c->activation = "silu";
  RETURN_IF_ERROR(r.String("hidden_act", &c->activation));
  if (c->activation != "silu") return Status::InvalidArgument(path + ": hidden_act '" + c->activation + "' is not supported (silu)");
  RETURN_IF_ERROR(r.Double("rope_theta", &c->rope_theta));
  // Newer configs nest RoPE settings in rope_parameters; older ones use rope_scaling.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const json& s = j[key];
    if (!s.is_object()) return Status::InvalidArgument(path + ": field '" + key + "' is not an object");
    if (s.contains("rope_theta") && s["rope_theta"].is_number()) c->rope_theta = s["rope_theta"].get<double>();
    std::string type = s.value("rope_type", s.value("type", std::string("default")));
    if (type == "linear") {
      if (!s.contains("factor") || !s["factor"].is_number() || s["factor"].get<double>() <= 0)
        return Status::InvalidArgument(path + ": linear " + key + " needs a positive 'factor'");
      c->rope_linear_factor = s["factor"].get<double>();
    } else if (type != "default") {
      return Status::InvalidArgument(path + ": " + key + " type '" + type + "' is not supported (default, linear)");
    }
  }
  if (c->num_kv_heads == 0 || c->num_heads % c->num_kv_heads != 0)
    return Status::InvalidArgument(path + ": num_attention_heads " + std::to_string(c->num_heads) +
                         " is not a multiple of num_key_value_heads " + std::to_string(c->num_kv_heads));
  return Status::OK();
}

}  // namespace

StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  ModelConfig c;
  Reader r(path, j);
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
  if (c.model_type == "opt") {
    RETURN_IF_ERROR(ParseOpt(path, r, &c));
  } else if (c.model_type == "llama") {
    RETURN_IF_ERROR(ParseLlama(path, j, r, &c));
  } else {
    return Status::InvalidArgument(path + ": unknown architecture model_type '" + c.model_type + "' (supported: opt, llama)");
  }
  c.head_dim = c.hidden_size / c.num_heads;
  RETURN_IF_ERROR(r.Int("head_dim", &c.head_dim, false));
  if (c.model_type == "opt" && c.hidden_size % c.num_heads != 0)
    return Status::InvalidArgument(path + ": hidden_size is not a multiple of num_attention_heads");
  if (c.head_dim == 0) return Status::InvalidArgument(path + ": head_dim must be positive");
  return c;
}

}  // namespace impress
