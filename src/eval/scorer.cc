#include "eval/scorer.h"

#include <ATen/ATen.h>

#include <functional>

#include "codec/kv_codec_tensor.h"
#include "common/device_copy.h"
#include "common/utf8.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/importance.h"

namespace impress {
namespace {

// Forwards to a cache, showing `see` each layer's queries and keys first.
class ObservedKv final : public KvProvider {
 public:
  ObservedKv(KvProvider& inner, std::function<void(const LayerQkv&)> see) : inner_(inner), see_(std::move(see)) {}
  PrefixKv Prefix(const LayerQkv& qkv) override {
    see_(qkv);
    return inner_.Prefix(qkv);
  }
  void Append(const LayerQkv& qkv) override { inner_.Append(qkv); }

 private:
  KvProvider& inner_;
  std::function<void(const LayerQkv&)> see_;
};

// The static control: each head keeps the k prefix tokens that the prefix's
// own prefill ranks highest (`importance` [Hq, P]), whatever the question.
SelectedPrefix SelectStatic(const at::Tensor& importance, int64_t k, const at::Tensor& keys, const at::Tensor& values) {
  SelectedPrefix s;
  const int64_t p = keys.size(1);
  s.total = p;
  s.kv.k = keys;
  s.kv.v = values;
  if (k >= p) {
    s.kept = p;
    return s;
  }
  at::Tensor keep;
  SetsUnion(TopKSets(ToHostNow(importance), k), p, &s.used, &keep);
  s.kv.keep = ToDevice(keep, keys.device());
  s.kept = k;
  return s;
}

}  // namespace

StatusOr<ScoredContext> TokenizeContext(const Tokenizer& tok, const std::string& context) {
  ScoredContext c;
  size_t keep = context.find_last_not_of(" \t\n\r\f\v");
  c.text = keep == std::string::npos ? "" : context.substr(0, keep + 1);
  c.moved = context.substr(c.text.size());
  ASSIGN_OR_RETURN(c.ids, tok.Encode(c.text, /*add_special_tokens=*/false));
  if (c.ids.empty()) return Status::InvalidArgument("document has an empty context");
  return c;
}

StatusOr<DocScore> ScoreChoices(Model& model, const Tokenizer& tok, const ScoredContext& ctx,
                                const at::Tensor& last_logprobs, RewindableKv& kv, const Doc& doc) {
  const int64_t ctx_len = static_cast<int64_t>(ctx.ids.size());
  // Each choice's continuation; its first token is predicted by the context.
  std::vector<std::vector<int32_t>> conts;
  std::vector<int32_t> run;       // every continuation but its last token, side by side
  std::vector<int64_t> segments;  // their lengths
  for (size_t c = 0; c < doc.choices.size(); ++c) {
    ASSIGN_OR_RETURN(std::vector<int32_t> whole, tok.Encode(ctx.text + ctx.moved + " " + doc.choices[c], false));
    if (whole.size() <= ctx.ids.size()) return Status::InvalidArgument("choice " + std::to_string(c) + " adds no tokens");
    conts.emplace_back(whole.begin() + ctx.ids.size(), whole.end());
    if (conts.back().size() < 2) continue;
    std::vector<int32_t> seg(conts.back().begin(), conts.back().end() - 1);
    RETURN_IF_ERROR(ValidateTokens(model.config(), seg, ctx_len));
    run.insert(run.end(), seg.begin(), seg.end());
    segments.push_back(static_cast<int64_t>(seg.size()));
  }
  at::Tensor lp;  // [run, vocab] log-probabilities, on the CPU
  if (!run.empty()) {
    const RewindableKv::Mark mark = kv.Save();
    ForwardOptions fo;
    fo.all_logits = true;
    fo.segments = segments;
    lp = at::log_softmax(model.Forward(run, ctx_len, kv, fo), -1).cpu();
    kv.Rewind(mark);
  }
  DocScore score;
  double best = -1e300, best_norm = -1e300;
  int64_t row = 0;  // first row of the current choice's segment in lp
  for (size_t c = 0; c < conts.size(); ++c) {
    const std::vector<int32_t>& cont = conts[c];
    double ll = last_logprobs[cont[0]].item<double>();
    if (cont.size() > 1) {
      const int64_t n = static_cast<int64_t>(cont.size()) - 1;
      at::Tensor next = at::tensor(std::vector<int64_t>(cont.begin() + 1, cont.end()), at::kLong);
      ll += lp.slice(0, row, row + n).gather(1, next.unsqueeze(1)).sum().item<double>();
      row += n;
    }
    score.loglik.push_back(ll);
    const double norm = ll / static_cast<double>(std::max<size_t>(1, Utf8Length(doc.choices[c])));
    if (ll > best) best = ll, score.pred = static_cast<int>(c);
    if (norm > best_norm) best_norm = norm, score.pred_norm = static_cast<int>(c);
  }
  return score;
}

Scorer::Scorer(Model& model, const Tokenizer& tok, const SelectorOptions& select, KvCodec codec)
    : model_(model), tok_(tok), cache_(model.config().num_layers), select_(select), codec_(codec) {}

void Scorer::StoreChunks() {
  const int64_t w = held_ / select_.chunk_tokens * select_.chunk_tokens;
  stored_k_.assign(model_.config().num_layers, at::Tensor());
  stored_v_ = stored_k_;
  for (int l = 0; l < model_.config().num_layers; ++l) {
    RoundTripPrefix(codec_, select_.chunk_tokens, w, cache_.keys(l), cache_.values(l));
    stored_k_[l] = cache_.keys(l).narrow(1, 0, w).clone();
    stored_v_[l] = cache_.values(l).narrow(1, 0, w).clone();
  }
  cache_.Truncate(w);  // the partial last chunk is computed over the decoded chunks, as a store's reader would
  if (held_ > w) model_.Forward(std::vector<int32_t>(prefix_ids_.begin() + w, prefix_ids_.end()), w, cache_);
}

void Scorer::ReuseStored(int64_t m) {
  const int64_t c = select_.chunk_tokens, w = m / c * c, held_w = held_ / c * c;
  // Positions before the last whole chunk within m are the store's chunks;
  // the rest are computed over them. What cache_ holds past a chunk boundary
  // is reusable only if it was computed over the same chunks.
  const int64_t keep = w == held_w ? std::min(m, held_) : std::min(w, held_w);
  cache_.Truncate(keep);
  for (int l = 0; keep < w && l < model_.config().num_layers; ++l) {
    LayerQkv stored;  // the stored rows only: no queries
    stored.layer = l;
    stored.k = stored_k_[l].narrow(1, keep, w - keep);
    stored.v = stored_v_[l].narrow(1, keep, w - keep);
    cache_.Append(stored);
  }
  const int64_t from = std::max(keep, w);
  if (m > from) model_.Forward(std::vector<int32_t>(prefix_ids_.begin() + from, prefix_ids_.begin() + m), from, cache_);
}

Status Scorer::SetPrefix(const std::string& prefix) {
  ASSIGN_OR_RETURN(prefix_ids_, tok_.Encode(prefix, /*add_special_tokens=*/false));
  prefix_ = prefix;
  cache_.Truncate(0);
  held_ = 0;
  counters_ = SelectionCounters(model_.config().num_layers);
  if (prefix_ids_.empty()) return Status::OK();
  RETURN_IF_ERROR(ValidateTokens(model_.config(), prefix_ids_, 0).WithContext("the shared prefix"));
  if (select_.kind == SelectorKind::kStatic) {
    // The prefix's own prefill rows rank its tokens, once: the paper's SPI.
    static_importance_.assign(model_.config().num_layers, at::Tensor());
    ObservedKv observed(cache_, [&](const LayerQkv& qkv) {
      static_importance_[qkv.layer] = SelfImportance(qkv.q, qkv.k, qkv.scale);
    });
    model_.Forward(prefix_ids_, 0, observed);
  } else {
    model_.Forward(prefix_ids_, 0, cache_);
  }
  held_ = prefix_tokens();
  if (codec_ != KvCodec::kNone) StoreChunks();
  return Status::OK();
}

Status Scorer::Attend(const Doc& doc, int64_t extra, const Then& then) {
  ASSIGN_OR_RETURN(ScoredContext ctx, TokenizeContext(tok_, prefix_ + doc.text));
  // Reuse the held prefix KV for the tokens the context shares with it; at
  // least one context token is run, to predict the continuation's first token.
  int64_t m = 0;
  const int64_t limit = std::min<int64_t>(prefix_tokens(), static_cast<int64_t>(ctx.ids.size()) - 1);
  while (m < limit && ctx.ids[m] == prefix_ids_[m]) ++m;
  if (codec_ != KvCodec::kNone) {
    ReuseStored(m);
  } else {
    cache_.Truncate(std::min(m, held_));
    if (m > held_) {  // an earlier document shared fewer prefix tokens: restore the prefix's KV
      model_.Forward(std::vector<int32_t>(prefix_ids_.begin() + held_, prefix_ids_.begin() + m), held_, cache_);
    }
  }
  held_ = m;
  std::vector<int32_t> rest(ctx.ids.begin() + m, ctx.ids.end());
  RETURN_IF_ERROR(ValidateTokens(model_.config(), rest, m + extra));  // room for `extra` more
  const int64_t end = static_cast<int64_t>(ctx.ids.size());
  if (select_.kind == SelectorKind::kFull || m == 0) {
    at::Tensor last = at::log_softmax(model_.Forward(rest, m, cache_)[0], -1).cpu();
    return then(ctx, last, cache_, end);
  }
  // The shared prefix's KV is held; each layer of this document attends to the selection from it.
  const SelectorOptions opt = ForRequest(select_, ctx.ids);
  SelectedContextKv kv(model_.config().num_layers, [&](const LayerQkv& qkv) {
    SelectedPrefix s = select_.kind == SelectorKind::kStatic
                           ? SelectStatic(static_importance_[qkv.layer].narrow(1, 0, m), RetainedTokens(select_.retention, m),
                                          cache_.keys(qkv.layer), cache_.values(qkv.layer))
                           : SelectFromPrefix(opt, qkv, cache_.keys(qkv.layer), cache_.values(qkv.layer));
    counters_.Add(qkv.layer, s);
    if (recall_) {
      // The reference is H2O's exact selection: `s` itself when it is one.
      SelectedPrefix h2o;
      const SelectedPrefix* reference = &s;
      if (opt.kind != SelectorKind::kH2O || !opt.importance.exact()) {
        SelectorOptions exact = opt;
        exact.kind = SelectorKind::kH2O;
        exact.importance = ImportanceShape{};  // every question row, no smoothing
        h2o = SelectFromPrefix(exact, qkv, cache_.keys(qkv.layer), cache_.values(qkv.layer));
        reference = &h2o;
      }
      counters_.AddRecall(RecallAgainst(s, *reference, qkv.q.size(0)));
    }
    return s;
  });
  at::Tensor last = at::log_softmax(model_.Forward(rest, m, kv)[0], -1).cpu();
  return then(ctx, last, kv, end);
}

StatusOr<DocScore> Scorer::Score(const Doc& doc) {
  DocScore out;
  RETURN_IF_ERROR(Attend(doc, 0, [&](const ScoredContext& ctx, const at::Tensor& last, RewindableKv& kv, int64_t) {
    ASSIGN_OR_RETURN(out, ScoreChoices(model_, tok_, ctx, last, kv, doc));
    return Status::OK();
  }));
  return out;
}

Generation GreedyContinue(Model& model, const Tokenizer& tok, const at::Tensor& first, RewindableKv& kv,
                                    int64_t pos, int max_new_tokens) {
  Generation out;
  const RewindableKv::Mark mark = kv.Save();
  at::Tensor last = first;
  for (int i = 0; i < max_new_tokens; ++i) {
    const int32_t next = static_cast<int32_t>(last.argmax().item<int64_t>());
    if (next == model.config().eos_token_id) break;
    out.ids.push_back(next);
    if (i + 1 == max_new_tokens) break;
    last = at::log_softmax(model.Forward({next}, pos++, kv)[0], -1).cpu();
  }
  kv.Rewind(mark);
  out.text = tok.Decode(out.ids);
  return out;
}

StatusOr<Generation> Scorer::Generate(const Doc& doc, int max_new_tokens) {
  Generation out;
  RETURN_IF_ERROR(Attend(doc, max_new_tokens, [&](const ScoredContext&, const at::Tensor& first, RewindableKv& kv,
                                                  int64_t pos) {
    out = GreedyContinue(model_, tok_, first, kv, pos, max_new_tokens);
    return Status::OK();  // the held prefix (and a document's context) stay as they were
  }));
  return out;
}

}  // namespace impress
