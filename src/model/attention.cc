#include "model/attention.h"

#include <ATen/ATen.h>

#include "common/status.h"
#include "model/attention_cpu.h"

namespace impress {
namespace {
constexpr int64_t kRowBlock = 512;

// Which new tokens each new token sees ([T, T] bool, true = may attend):
// x.attend_new when the tokens are segments, else causal (column j <= row i).
at::Tensor AttendNew(const LayerQkv& x) {
  if (x.attend_new.defined()) return x.attend_new;
  const int64_t t = x.q.size(1);
  return at::ones({t, t}, at::TensorOptions().device(x.q.device()).dtype(at::kBool)).tril();
}

// Every prefix token visible to every head: LibTorch's fused attention
// (flash attention on CPU and CUDA) with a causal mask over the new tokens.
at::Tensor AttendFused(const LayerQkv& x, const at::Tensor& keys, const at::Tensor& vals, int64_t p) {
  const int64_t hq = x.q.size(0), t = x.q.size(1), d = x.q.size(2);
  std::optional<at::Tensor> mask;
  if (p > 0 || x.attend_new.defined()) {  // true = may attend: all prefix columns, then AttendNew
    const at::Tensor own = AttendNew(x);
    mask = p > 0 ? at::cat({at::ones({t, p}, own.options()), own}, 1) : own;
  }
  at::Tensor out = at::scaled_dot_product_attention(x.q.unsqueeze(0), keys.unsqueeze(0), vals.unsqueeze(0), mask,
                                                    /*dropout_p=*/0.0, /*is_causal=*/!mask.has_value(), x.scale,
                                                    /*enable_gqa=*/keys.size(0) != hq);
  return out[0].transpose(0, 1).reshape({t, hq * d});
}

}  // namespace

at::Tensor Attend(const LayerQkv& x, const PrefixKv& prefix) {
  if (at::Tensor fused; AttendCpu(x, prefix, &fused)) return fused;
  return AttendLibTorch(x, prefix);
}

at::Tensor AttendLibTorch(const LayerQkv& x, const PrefixKv& prefix) {
  const int64_t hq = x.q.size(0), t = x.q.size(1), d = x.q.size(2);
  const int64_t hkv = x.k.size(0);
  IMPRESS_CHECK(hq % hkv == 0);
  const int64_t g = hq / hkv;
  const int64_t p = prefix.k.defined() ? prefix.k.size(1) : 0;

  at::Tensor keys = p > 0 ? at::cat({prefix.k, x.k}, 1) : x.k;    // [Hkv, S, d]
  at::Tensor vals = p > 0 ? at::cat({prefix.v, x.v}, 1) : x.v;
  if (!(p > 0 && prefix.keep.defined())) return AttendFused(x, keys, vals, p);
  // From here on some prefix token is hidden from some head.
  at::Tensor q = (x.q * x.scale).view({hkv, g, t, d});
  const at::Tensor hidden = prefix.keep.logical_not().view({hkv, g, 1, p});  // true hides
  const auto opts = at::TensorOptions().device(x.q.device());

  const at::Tensor own = AttendNew(x);
  std::vector<at::Tensor> outs;
  for (int64_t r0 = 0; r0 < t; r0 += kRowBlock) {
    const int64_t tb = std::min(kRowBlock, t - r0);
    const int64_t s = p + r0 + tb;  // columns this block can see
    at::Tensor qb = q.slice(2, r0, r0 + tb).reshape({hkv, g * tb, d});
    at::Tensor kb = keys.slice(1, 0, s);
    at::Tensor scores = at::bmm(qb, kb.transpose(1, 2)).view({hkv, g, tb, s});
    // The new columns a row of this block does not see (no row sees a later one).
    at::Tensor future = own.slice(0, r0, r0 + tb).slice(1, 0, r0 + tb).logical_not();  // [tb, r0 + tb]
    future = at::cat({at::zeros({tb, p}, opts.dtype(at::kBool)), future}, 1);
    scores.masked_fill_(future, -std::numeric_limits<float>::infinity());
    scores.slice(3, 0, p).masked_fill_(hidden, -std::numeric_limits<float>::infinity());
    at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(vals.scalar_type());
    at::Tensor ob = at::bmm(probs.view({hkv, g * tb, s}), vals.slice(1, 0, s));  // [Hkv, g*tb, d]
    outs.push_back(ob.view({hq, tb, d}));
  }
  at::Tensor out = outs.size() == 1 ? outs[0] : at::cat(outs, 1);  // [Hq, T, d]
  return out.transpose(0, 1).reshape({t, hq * d});
}

PrefixKv DenseKvCache::Prefix(const LayerQkv& qkv) {
  const int l = qkv.layer;
  if (len_[l] == 0) return {};
  return PrefixKv{k_[l].narrow(1, 0, len_[l]), v_[l].narrow(1, 0, len_[l]), {}};
}

void DenseKvCache::Append(const LayerQkv& qkv) {
  const int l = qkv.layer;
  const int64_t t = qkv.k.size(1), need = len_[l] + t;
  if (!k_[l].defined() || k_[l].size(1) < need) {
    const int64_t cap = std::max<int64_t>(need, k_[l].defined() ? 2 * k_[l].size(1) : need);
    at::Tensor k = at::empty({qkv.k.size(0), cap, qkv.k.size(2)}, qkv.k.options());
    at::Tensor v = at::empty({qkv.v.size(0), cap, qkv.v.size(2)}, qkv.v.options());
    if (len_[l] > 0) {
      k.narrow(1, 0, len_[l]).copy_(k_[l].narrow(1, 0, len_[l]));
      v.narrow(1, 0, len_[l]).copy_(v_[l].narrow(1, 0, len_[l]));
    }
    k_[l] = k;
    v_[l] = v;
  }
  k_[l].narrow(1, len_[l], t).copy_(qkv.k);
  v_[l].narrow(1, len_[l], t).copy_(qkv.v);
  len_[l] = need;
}

at::Tensor DenseKvCache::keys(int layer) const { return k_[layer].narrow(1, 0, len_[layer]); }
at::Tensor DenseKvCache::values(int layer) const { return v_[layer].narrow(1, 0, len_[layer]); }

void DenseKvCache::Rewind(const Mark& mark) {
  for (size_t l = 0; l < len_.size(); ++l) len_[l] = std::min(len_[l], mark[l]);
}

void DenseKvCache::Truncate(int64_t n) {
  for (auto& len : len_) len = std::min(len, n);
}

}  // namespace impress
