// Model hyper-parameters read from a Hugging Face config.json.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace impress {

struct ModelConfig {
  std::string model_type;          // its row of the architecture table (model/architecture.h)
  int vocab_size = 0;
  int hidden_size = 0;             // width of the residual stream
  int num_layers = 0;
  int num_heads = 0;               // query heads
  int num_kv_heads = 0;            // key/value heads (== num_heads unless GQA)
  int head_dim = 0;                // per-head width
  int intermediate_size = 0;       // FFN width (OPT: ffn_dim)
  int max_positions = 0;           // longest sequence the model supports
  int bos_token_id = -1;
  int eos_token_id = -1;
  bool tie_word_embeddings = true;
  std::string torch_dtype;         // as stored ("float32", "float16", "bfloat16", or "")

  // OPT only.
  int word_embed_proj_dim = 0;     // embedding width; != hidden_size adds project_in/out
  bool do_layer_norm_before = true;  // false: post-LN (opt-350m)
  bool enable_bias = true;
  bool layer_norm_elementwise_affine = true;
  bool remove_final_layer_norm = false;
  std::string activation = "relu";  // OPT: activation_function; Llama: hidden_act

  // Llama only.
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double rope_linear_factor = 1.0;  // rope_scaling {"type": "linear", "factor": f}
  bool attention_bias = false;
  bool mlp_bias = false;

  // Bytes of K and V per token over all layers, at `bytes_per_elem` bytes a value.
  int64_t KvBytesPerToken(int bytes_per_elem) const {
    return int64_t{2} * num_layers * num_kv_heads * head_dim * bytes_per_elem;
  }
};

// Parses `path` (a config.json). Errors name the file and the field.
StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

}  // namespace impress
