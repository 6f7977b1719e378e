#include "select/selector.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "common/named.h"
#include "select/memory_source.h"
#include "select/method.h"

namespace impress {

SelectedPrefix SelectFromPrefix(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& pk,
                                const at::Tensor& pv) {
  MemorySource src(pk, pv, opt.chunk_tokens, opt.digest.codec);
  StatusOr<SelectedPrefix> s = MakeSelectionMethod(opt)->Select(qkv, src, nullptr);
  IMPRESS_CHECK(s.ok());  // reads from memory do not fail
  return *std::move(s);
}

SelectorOptions ForRequest(const SelectorOptions& opt, const std::vector<int32_t>& tokens) {
  SelectorOptions o = opt;
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the token ids
  for (int32_t t : tokens) h = (h ^ static_cast<uint32_t>(t)) * 0x100000001B3ull;
  o.seed = opt.seed ^ h;
  return o;
}

at::Tensor HeadSets(const SelectedPrefix& s, int64_t heads) {
  if (!s.used.defined()) return at::ones({heads, s.total}, at::kBool);
  const at::Tensor used = s.used.to(at::kCPU, at::kLong);
  if (s.kv.keep.defined()) {
    // keep's columns are kv's tokens: every prefix position where kv holds
    // all P keys (H2O, static), else the `used` positions in order.
    const int64_t width = s.kv.k.defined() ? s.kv.k.size(1) : s.kv.keep.size(1);
    const at::Tensor keep = s.kv.keep.to(at::kCPU, at::kBool).narrow(1, 0, width);
    if (width == s.total) return keep.clone();
    return at::zeros({heads, s.total}, at::kBool).index_copy_(1, used, keep);
  }
  return at::zeros({heads, s.total}, at::kBool).index_fill_(1, used, true);
}

double RecallAgainst(const SelectedPrefix& s, const SelectedPrefix& reference, int64_t heads) {
  const at::Tensor ref = HeadSets(reference, heads);
  const at::Tensor hit = (HeadSets(s, heads) & ref).sum(1).to(at::kDouble);
  return (hit / ref.sum(1).to(at::kDouble).clamp_min(1)).mean().item<double>();
}

void SelectionCounters::Add(int layer, const SelectedPrefix& s) {
  probes[layer] += s.probed;
  fallbacks[layer] += s.fallback;
  kept[layer] += s.kept;
  total[layer] += s.total;
  if (s.probed) {
    similarity_sum += s.similarity;
    ++similarity_n;
  }
}

void SelectionCounters::Merge(const SelectionCounters& o) {
  recall_sum += o.recall_sum;
  recall_n += o.recall_n;
  for (size_t l = 0; l < o.probes.size() && l < probes.size(); ++l) {
    probes[l] += o.probes[l];
    fallbacks[l] += o.fallbacks[l];
    kept[l] += o.kept[l];
    total[l] += o.total[l];
  }
  similarity_sum += o.similarity_sum;
  similarity_n += o.similarity_n;
}

double SelectionCounters::FallbackShare() const {
  int64_t p = 0, f = 0;
  for (size_t l = 0; l < probes.size(); ++l) p += probes[l], f += fallbacks[l];
  return p ? double(f) / p : 0;
}

double SelectionCounters::KeptShare() const {
  int64_t k = 0, t = 0;
  for (size_t l = 0; l < kept.size(); ++l) k += kept[l], t += total[l];
  return t ? double(k) / t : 1;
}

SelectedContextKv::SelectedContextKv(int layers, Source source)
    : source_(std::move(source)), prefix_(layers), chosen_(layers, false), tail_(layers) {}

PrefixKv SelectedContextKv::Prefix(const LayerQkv& qkv) {
  const int l = qkv.layer;
  if (!chosen_[l]) {
    prefix_[l] = source_(qkv).kv;
    chosen_[l] = true;
  }
  const PrefixKv& p = prefix_[l];
  PrefixKv tail = tail_.Prefix(qkv);
  if (!tail.k.defined()) return p;
  if (!p.k.defined()) return tail;
  PrefixKv out{at::cat({p.k, tail.k}, 1), at::cat({p.v, tail.v}, 1), {}};
  if (p.keep.defined())
    out.keep = at::cat({p.keep, at::ones({p.keep.size(0), tail.k.size(1)}, p.keep.options())}, 1);
  return out;
}

const std::vector<std::string>& ItfUnitNames() {
  static const std::vector<std::string> names = {"token", "chunk"};
  return names;
}

StatusOr<ImportanceShape> ParseImportanceShape(int64_t window, int64_t pool) {
  if (pool < 1 || pool % 2 == 0)
    return Status::InvalidArgument("--importance-pool: " + std::to_string(pool) + " is not an odd number >= 1");
  return ImportanceShape{window, pool};
}

const std::vector<std::string>& DigestScoreNames() {
  static const std::vector<std::string> names = {"keys", "bound", "rowmax"};
  return names;
}

const std::vector<std::string>& DigestGroupsNames() {
  static const std::vector<std::string> names = {"rank", "sum"};
  return names;
}

void AddImportanceJson(const ImportanceShape& shape, nlohmann::ordered_json* j) {
  if (shape.exact()) return;
  (*j)["importance_window"] = shape.window;
  (*j)["importance_pool"] = shape.pool;
}

nlohmann::ordered_json DigestJson(const DigestOptions& d) {
  nlohmann::ordered_json j = {{"sink_tokens", d.sink_tokens}, {"recent_tokens", d.recent_tokens},
                              {"dense_layers", d.dense_layers}, {"window", d.window}, {"pool", d.pool},
                              {"score", DigestScoreNames()[static_cast<size_t>(d.score)]},
                              {"groups", DigestGroupsNames()[static_cast<size_t>(d.groups)]}};
  if (d.codec != DigestCodec::kInt4) j["codec"] = NameOf(DigestCodecNames(), d.codec);  // records without it: int4
  return j;
}

StatusOr<ItfUnit> ParseItfUnit(const std::string& name) {
  return ParseNamed<ItfUnit>(ItfUnitNames(), name, "--itf-unit", "unit");
}

}  // namespace impress
