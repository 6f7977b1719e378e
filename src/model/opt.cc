// OPT: learned positions (offset 2), LayerNorm, ReLU FFN, pre-LN or post-LN
// (do_layer_norm_before), optional project_in/out when word_embed_proj_dim
// differs from hidden_size, output embedding tied to the input embedding.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>

#include "model/arch.h"
#include "model/attention.h"

namespace impress {
namespace {

constexpr int64_t kPositionOffset = 2;  // OPT's learned positions start at row 2
constexpr double kLayerNormEps = 1e-5;

struct OptLayer {
  at::Tensor ln1_w, ln1_b;            // self_attn_layer_norm [D]
  at::Tensor wq, wk, wv, wo;          // [D, D]
  at::Tensor bq, bk, bv, bo;          // [D] (enable_bias)
  at::Tensor ln2_w, ln2_b;            // final_layer_norm of the layer [D]
  at::Tensor fc1_w, fc1_b;            // [F, D], [F]
  at::Tensor fc2_w, fc2_b;            // [D, F], [D]
};

class OptModel final : public Model {
 public:
  at::Tensor Forward(const std::vector<int32_t>& tokens, int64_t start_pos, KvProvider& kv,
                     const ForwardOptions& opt) override;

  at::Tensor embed;                // [V, P] with P = word_embed_proj_dim
  at::Tensor positions;            // [max_positions + 2, D]
  at::Tensor project_in;           // optional [D, P]
  at::Tensor project_out;          // optional [P, D]
  bool has_final_ln = false;
  at::Tensor final_ln_w, final_ln_b;  // [D] when has_final_ln and affine
  at::Tensor lm_head;              // [V, P]
  std::vector<OptLayer> layers;
};

at::Tensor Norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::layer_norm(x, {x.size(-1)}, w.defined() ? std::optional<at::Tensor>(w) : std::nullopt,
                        b.defined() ? std::optional<at::Tensor>(b) : std::nullopt, kLayerNormEps);
}

at::Tensor OptModel::Forward(const std::vector<int32_t>& tokens, int64_t start_pos, KvProvider& kv,
                             const ForwardOptions& opt) {
  c10::InferenceMode guard;
  const ModelConfig& c = config_;
  const int64_t t = static_cast<int64_t>(tokens.size());
  const bool pre_ln = c.do_layer_norm_before;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  at::Tensor x = EmbedTokens(embed, tokens);
  if (project_in.defined()) x = at::linear(x, project_in);
  x = x + positions.index_select(0, TokenPositions(start_pos, t, opt.segments, positions.device()) + kPositionOffset);
  const at::Tensor attend_new = SegmentMask(opt.segments, device_);
  auto act = [&](const at::Tensor& h) { return c.activation == "gelu" ? at::gelu(h) : at::relu(h); };

  for (int il = 0; il < c.num_layers; ++il) {
    const OptLayer& L = layers[il];
    at::Tensor h = pre_ln ? Norm(x, L.ln1_w, L.ln1_b) : x;
    LayerQkv qkv;
    qkv.layer = il;
    qkv.scale = scale;
    qkv.attend_new = attend_new;
    qkv.q = SplitHeads(Linear(h, L.wq, L.bq), c.num_heads, c.head_dim).contiguous();
    qkv.k = SplitHeads(Linear(h, L.wk, L.bk), c.num_kv_heads, c.head_dim).contiguous();
    qkv.v = SplitHeads(Linear(h, L.wv, L.bv), c.num_kv_heads, c.head_dim).contiguous();
    PrefixKv prefix = kv.Prefix(qkv);
    x = LinearResidual(x, Attend(qkv, prefix), L.wo, L.bo);
    kv.Append(qkv);
    if (!pre_ln) x = Norm(x, L.ln1_w, L.ln1_b);
    h = pre_ln ? Norm(x, L.ln2_w, L.ln2_b) : x;
    x = LinearResidual(x, act(Linear(h, L.fc1_w, L.fc1_b)), L.fc2_w, L.fc2_b);
    if (!pre_ln) x = Norm(x, L.ln2_w, L.ln2_b);
  }
  if (!opt.all_logits) x = x.slice(0, t - 1, t);
  if (has_final_ln) x = Norm(x, final_ln_w, final_ln_b);
  if (project_out.defined()) x = at::linear(x, project_out);
  return at::linear(x, lm_head).to(at::kFloat);
}

}  // namespace

Status ParseOptConfig(ConfigReader& r, ModelConfig* c) {
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
    return Status::InvalidArgument(r.path() + ": activation_function '" + c->activation + "' is not supported (relu, gelu)");
  c->num_kv_heads = c->num_heads;
  if (c->hidden_size % c->num_heads != 0)
    return Status::InvalidArgument(r.path() + ": hidden_size is not a multiple of num_attention_heads");
  return Status::OK();
}

void DescribeOpt(const ModelConfig& c, nlohmann::ordered_json* info) {
  (*info)["pre_layer_norm"] = c.do_layer_norm_before;
  (*info)["word_embed_proj_dim"] = c.word_embed_proj_dim;
}

StatusOr<std::unique_ptr<Model>> CreateOptModel(const ModelConfig& c, const WeightLoader& w) {
  auto m = std::make_unique<OptModel>();
  m->SetIdentity(c, w.dir(), w.device(), w.dtype());
  const int64_t D = c.hidden_size, V = c.vocab_size, F = c.intermediate_size, P = c.word_embed_proj_dim;
  const bool affine = c.layer_norm_elementwise_affine;
  // Hugging Face names the decoder "model.decoder." under OPTForCausalLM and
  // "decoder." in a bare OPTModel checkpoint.
  const std::string root = w.Has("model.decoder.embed_tokens.weight") ? "model.decoder." : "decoder.";
  auto norm = [&](const std::string& name, at::Tensor* wt, at::Tensor* b) -> Status {
    if (!affine) return Status::OK();
    ASSIGN_OR_RETURN(*wt, w.Get(name + ".weight", {D}));
    ASSIGN_OR_RETURN(*b, w.Get(name + ".bias", {D}));
    return Status::OK();
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in, at::Tensor* wt, at::Tensor* b) -> Status {
    ASSIGN_OR_RETURN(*wt, w.Get(name + ".weight", {out, in}));
    if (c.enable_bias) {
      ASSIGN_OR_RETURN(*b, w.Get(name + ".bias", {out}));
    }
    return Status::OK();
  };
  ASSIGN_OR_RETURN(m->embed, w.Get(root + "embed_tokens.weight", {V, P}));
  ASSIGN_OR_RETURN(m->positions, w.Get(root + "embed_positions.weight", {c.max_positions + kPositionOffset, D}));
  if (P != D) {
    ASSIGN_OR_RETURN(m->project_in, w.Get(root + "project_in.weight", {D, P}));
    ASSIGN_OR_RETURN(m->project_out, w.Get(root + "project_out.weight", {P, D}));
  }
  m->has_final_ln = c.do_layer_norm_before && !c.remove_final_layer_norm;
  if (m->has_final_ln) RETURN_IF_ERROR(norm(root + "final_layer_norm", &m->final_ln_w, &m->final_ln_b));
  ASSIGN_OR_RETURN(m->lm_head, w.Optional("lm_head.weight", {V, P}));
  if (!m->lm_head.defined() || c.tie_word_embeddings) m->lm_head = m->embed;
  for (int il = 0; il < c.num_layers; ++il) {
    const std::string p = root + "layers." + std::to_string(il) + ".";
    OptLayer L;
    RETURN_IF_ERROR(norm(p + "self_attn_layer_norm", &L.ln1_w, &L.ln1_b));
    RETURN_IF_ERROR(linear(p + "self_attn.q_proj", D, D, &L.wq, &L.bq));
    RETURN_IF_ERROR(linear(p + "self_attn.k_proj", D, D, &L.wk, &L.bk));
    RETURN_IF_ERROR(linear(p + "self_attn.v_proj", D, D, &L.wv, &L.bv));
    RETURN_IF_ERROR(linear(p + "self_attn.out_proj", D, D, &L.wo, &L.bo));
    RETURN_IF_ERROR(norm(p + "final_layer_norm", &L.ln2_w, &L.ln2_b));
    RETURN_IF_ERROR(linear(p + "fc1", F, D, &L.fc1_w, &L.fc1_b));
    RETURN_IF_ERROR(linear(p + "fc2", D, F, &L.fc2_w, &L.fc2_b));
    m->layers.push_back(std::move(L));
  }
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace impress
