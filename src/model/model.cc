#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>


#include "model/arch.h"
#include "model/safetensors.h"

namespace impress {
namespace {

StatusOr<at::ScalarType> ParseComputeDType(const std::string& s, bool cuda) {
  if (s == "auto") return cuda ? at::kHalf : at::kFloat;
  if (s == "float32" || s == "fp32") return at::kFloat;
  if (s == "float16" || s == "fp16") return at::kHalf;
  if (s == "bfloat16" || s == "bf16") return at::kBFloat16;
  return Status::InvalidArgument("--dtype: unknown dtype '" + s + "' (float32, float16, bfloat16, auto)");
}

}  // namespace

at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::linear(x, w, b.defined() ? std::optional<at::Tensor>(b) : std::nullopt);
}

at::Tensor LinearResidual(const at::Tensor& residual, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  at::Tensor out = at::addmm(residual, x, w.t());
  if (b.defined()) out.add_(b);
  return out;
}

at::Tensor SplitHeads(const at::Tensor& x, int64_t heads, int64_t head_dim) {
  return x.reshape({x.size(0), heads, head_dim}).transpose(0, 1);
}

at::Tensor EmbedTokens(const at::Tensor& table, const std::vector<int32_t>& tokens) {
  at::Tensor ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).to(table.device());
  return table.index_select(0, ids);
}

at::Tensor TokenPositions(int64_t start_pos, int64_t t, const std::vector<int64_t>& segments, at::Device device) {
  if (segments.size() < 2) return at::arange(start_pos, start_pos + t, at::TensorOptions().dtype(at::kLong).device(device));
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(t));
  for (int64_t n : segments)
    for (int64_t i = 0; i < n; ++i) pos.push_back(start_pos + i);
  IMPRESS_CHECK(static_cast<int64_t>(pos.size()) == t);
  return at::tensor(pos, at::kLong).to(device);
}

at::Tensor SegmentMask(const std::vector<int64_t>& segments, at::Device device) {
  if (segments.size() < 2) return {};
  int64_t t = 0;
  for (int64_t n : segments) t += n;
  at::Tensor mask = at::zeros({t, t}, at::kBool);
  int64_t at = 0;
  for (int64_t n : segments) {
    IMPRESS_CHECK(n > 0);
    mask.slice(0, at, at + n).slice(1, at, at + n).copy_(at::ones({n, n}, at::kBool).tril());
    at += n;
  }
  return mask.to(device);
}

Status ValidateTokens(const ModelConfig& c, const std::vector<int32_t>& tokens, int64_t start_pos) {
  if (tokens.empty()) return Status::InvalidArgument("no tokens to run");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return Status::InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary of " +
                           std::to_string(c.vocab_size));
  if (start_pos + static_cast<int64_t>(tokens.size()) > c.max_positions)
    return Status::InvalidArgument("sequence of " + std::to_string(start_pos + tokens.size()) +
                         " tokens is longer than the model's context of " + std::to_string(c.max_positions));
  return Status::OK();
}

StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& dir, const LoadOptions& opt) {
  ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir + "/config.json"));
  const Architecture* arch = FindArchitecture(config.model_type);
  IMPRESS_CHECK(arch != nullptr);  // LoadModelConfig accepts only the table's types
  bool cuda = false;
  if (opt.device == "cuda") {
    if (!at::hasCUDA()) return Status::InvalidArgument("--device cuda: LibTorch sees no CUDA device");
    cuda = true;
  } else if (opt.device == "auto") {
    cuda = at::hasCUDA();
  } else if (opt.device != "cpu") {
    return Status::InvalidArgument("--device: unknown device '" + opt.device + "' (cpu, cuda, auto)");
  }
  ASSIGN_OR_RETURN(at::ScalarType dtype, ParseComputeDType(opt.dtype, cuda));
  ASSIGN_OR_RETURN(auto tensors, TensorSet::OpenDir(dir));
  WeightLoader loader(dir, *tensors, cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU), dtype);
  auto model = arch->create(config, loader);
  if (!model.ok()) return model.status();
  return model;
}

}  // namespace impress
