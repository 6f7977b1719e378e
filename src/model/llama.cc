// Llama family: RMSNorm, RoPE (default or linear scaling), SwiGLU, MHA or GQA.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>

#include "model/arch.h"
#include "model/attention.h"

namespace impress {
namespace {

struct LlamaLayer {
  at::Tensor attn_norm;              // [D]
  at::Tensor wqkv;                   // [(Hq + 2 Hkv) d, D]: q, k, v projections stacked
  at::Tensor bqkv;                   // optional [(Hq + 2 Hkv) d] (attention_bias)
  at::Tensor wo, bo;                 // [D, Hq d], optional [D]
  at::Tensor ffn_norm;               // [D]
  at::Tensor w_gate_up;              // [2F, D]: gate and up projections stacked
  at::Tensor b_gate_up;              // optional [2F] (mlp_bias)
  at::Tensor w_down, b_down;         // [D, F], optional [D]
};

class LlamaModel final : public Model {
 public:
  at::Tensor Forward(const std::vector<int32_t>& tokens, int64_t start_pos, KvProvider& kv,
                     const ForwardOptions& opt) override;

  at::Tensor embed;     // [V, D]
  at::Tensor norm;      // [D]
  at::Tensor lm_head;   // [V, D] (the embedding when tied)
  at::Tensor inv_freq;  // [d/2] fp32
  std::vector<LlamaLayer> layers;
};

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return w * y.to(x.scalar_type());
}

// x: [H, T, d]; cos, sin: [T, d].
at::Tensor Rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

at::Tensor LlamaModel::Forward(const std::vector<int32_t>& tokens, int64_t start_pos, KvProvider& kv,
                               const ForwardOptions& opt) {
  c10::InferenceMode guard;
  const ModelConfig& c = config_;
  const int64_t t = static_cast<int64_t>(tokens.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  at::Tensor pos = TokenPositions(start_pos, t, opt.segments, device_).to(at::kFloat);
  const at::Tensor attend_new = SegmentMask(opt.segments, device_);
  if (c.rope_linear_factor != 1.0) pos = pos / c.rope_linear_factor;
  at::Tensor freqs = at::outer(pos, inv_freq);  // [T, d/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(dtype_), sin = emb.sin().to(dtype_);

  at::Tensor x = EmbedTokens(embed, tokens);  // [T, D]
  for (int il = 0; il < c.num_layers; ++il) {
    const LlamaLayer& L = layers[il];
    at::Tensor h = RmsNorm(x, L.attn_norm, c.rms_norm_eps);
    LayerQkv qkv;
    qkv.layer = il;
    qkv.scale = scale;
    qkv.attend_new = attend_new;
    at::Tensor proj = Linear(h, L.wqkv, L.bqkv);  // [T, (Hq + 2 Hkv) d]
    const int64_t qd = int64_t{c.num_heads} * c.head_dim, kvd = int64_t{c.num_kv_heads} * c.head_dim;
    qkv.q = Rope(SplitHeads(proj.narrow(1, 0, qd), c.num_heads, c.head_dim), cos, sin);
    qkv.k = Rope(SplitHeads(proj.narrow(1, qd, kvd), c.num_kv_heads, c.head_dim), cos, sin);
    qkv.v = SplitHeads(proj.narrow(1, qd + kvd, kvd), c.num_kv_heads, c.head_dim).contiguous();
    PrefixKv prefix = kv.Prefix(qkv);
    x = LinearResidual(x, Attend(qkv, prefix), L.wo, L.bo);
    kv.Append(qkv);
    h = RmsNorm(x, L.ffn_norm, c.rms_norm_eps);
    at::Tensor gate_up = Linear(h, L.w_gate_up, L.b_gate_up);  // [T, 2F]
    const int64_t f = c.intermediate_size;
    x = LinearResidual(x, at::silu(gate_up.narrow(1, 0, f)).mul_(gate_up.narrow(1, f, f)), L.w_down, L.b_down);
  }
  if (!opt.all_logits) x = x.slice(0, t - 1, t);
  x = RmsNorm(x, norm, c.rms_norm_eps);
  return at::linear(x, lm_head).to(at::kFloat);
}

}  // namespace

Status ParseLlamaConfig(ConfigReader& r, ModelConfig* c) {
  const std::string& path = r.path();
  const nlohmann::json& j = r.json();
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
    const nlohmann::json& s = j[key];
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

void DescribeLlama(const ModelConfig& c, nlohmann::ordered_json* info) {
  (*info)["rope_theta"] = c.rope_theta;
  (*info)["tie_word_embeddings"] = c.tie_word_embeddings;
}

StatusOr<std::unique_ptr<Model>> CreateLlamaModel(const ModelConfig& c, const WeightLoader& w) {
  auto m = std::make_unique<LlamaModel>();
  m->SetIdentity(c, w.dir(), w.device(), w.dtype());
  const int64_t D = c.hidden_size, V = c.vocab_size, F = c.intermediate_size, d = c.head_dim;
  const int64_t qd = int64_t{c.num_heads} * d, kvd = int64_t{c.num_kv_heads} * d;
  ASSIGN_OR_RETURN(m->embed, w.Get("model.embed_tokens.weight", {V, D}));
  ASSIGN_OR_RETURN(m->norm, w.Get("model.norm.weight", {D}));
  ASSIGN_OR_RETURN(m->lm_head, w.Optional("lm_head.weight", {V, D}));
  if (!m->lm_head.defined()) {
    if (!c.tie_word_embeddings) return Status::InvalidArgument(w.dir() + ": safetensors hold no tensor 'lm_head.weight'");
    m->lm_head = m->embed;
  }
  for (int il = 0; il < c.num_layers; ++il) {
    const std::string p = "model.layers." + std::to_string(il) + ".";
    LlamaLayer L;
    ASSIGN_OR_RETURN(L.attn_norm, w.Get(p + "input_layernorm.weight", {D}));
    ASSIGN_OR_RETURN(at::Tensor wq, w.Get(p + "self_attn.q_proj.weight", {qd, D}));
    ASSIGN_OR_RETURN(at::Tensor wk, w.Get(p + "self_attn.k_proj.weight", {kvd, D}));
    ASSIGN_OR_RETURN(at::Tensor wv, w.Get(p + "self_attn.v_proj.weight", {kvd, D}));
    L.wqkv = at::cat({wq, wk, wv}, 0);
    ASSIGN_OR_RETURN(L.wo, w.Get(p + "self_attn.o_proj.weight", {D, qd}));
    if (c.attention_bias) {
      ASSIGN_OR_RETURN(at::Tensor bq, w.Get(p + "self_attn.q_proj.bias", {qd}));
      ASSIGN_OR_RETURN(at::Tensor bk, w.Get(p + "self_attn.k_proj.bias", {kvd}));
      ASSIGN_OR_RETURN(at::Tensor bv, w.Get(p + "self_attn.v_proj.bias", {kvd}));
      L.bqkv = at::cat({bq, bk, bv}, 0);
      ASSIGN_OR_RETURN(L.bo, w.Optional(p + "self_attn.o_proj.bias", {D}));
    }
    ASSIGN_OR_RETURN(L.ffn_norm, w.Get(p + "post_attention_layernorm.weight", {D}));
    ASSIGN_OR_RETURN(at::Tensor w_gate, w.Get(p + "mlp.gate_proj.weight", {F, D}));
    ASSIGN_OR_RETURN(at::Tensor w_up, w.Get(p + "mlp.up_proj.weight", {F, D}));
    L.w_gate_up = at::cat({w_gate, w_up}, 0);
    ASSIGN_OR_RETURN(L.w_down, w.Get(p + "mlp.down_proj.weight", {D, F}));
    if (c.mlp_bias) {
      ASSIGN_OR_RETURN(at::Tensor b_gate, w.Get(p + "mlp.gate_proj.bias", {F}));
      ASSIGN_OR_RETURN(at::Tensor b_up, w.Get(p + "mlp.up_proj.bias", {F}));
      L.b_gate_up = at::cat({b_gate, b_up}, 0);
      ASSIGN_OR_RETURN(L.b_down, w.Get(p + "mlp.down_proj.bias", {D}));
    }
    m->layers.push_back(std::move(L));
  }
  at::Tensor idx = at::arange(0, d, 2, at::TensorOptions().dtype(at::kFloat));
  m->inv_freq = (1.0 / at::pow(c.rope_theta, idx / static_cast<double>(d))).to(w.device());
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace impress
