// Log-likelihood scoring of multiple-choice documents behind a shared prefix,
// with lm-evaluation-harness's tokenization of (context, continuation) pairs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codec/kv_codec.h"
#include "common/status.h"
#include "data/task.h"
#include "model/kv_provider.h"
#include "select/selector.h"

#include <ATen/core/Tensor.h>

namespace impress {

class Model;
class Tokenizer;

// A generation line's output (data/task_file.h): greedy tokens after a context.
struct Generation {
  std::vector<int32_t> ids;  // the generated tokens, the end-of-sequence token left out
  std::string text;          // their decoding
};

struct DocScore {
  std::vector<double> loglik;  // per choice: sum of log p(continuation token | everything before)
  int pred = 0;                // argmax loglik (lm-eval's acc)
  int pred_norm = 0;           // argmax loglik / len(choice) in characters (acc_norm)
};

// A context tokenized as lm-eval does: trailing whitespace moved onto the
// continuation, no special tokens.
struct ScoredContext {
  std::string text;   // the context without its trailing whitespace
  std::string moved;  // that whitespace, prepended to every continuation
  std::vector<int32_t> ids;
};
StatusOr<ScoredContext> TokenizeContext(const Tokenizer& tok, const std::string& context);

// Scores every choice of `doc` after `ctx`, given `kv` holding the KV the
// context's tokens attend to (all of it, or a selection) and the
// log-probabilities that follow the context's last token. Each choice runs
// only its own tokens over `kv` at positions after the context; all choices
// run in one pass as independent segments (ForwardOptions::segments), and
// `kv` is then rewound.
StatusOr<DocScore> ScoreChoices(Model& model, const Tokenizer& tok, const ScoredContext& ctx,
                                const at::Tensor& last_logprobs, RewindableKv& kv, const Doc& doc);

// Greedy decoding of up to `max_new_tokens` tokens after a context whose
// last token's log-probabilities are `first` and whose KV (all of it or a
// selection, then the context's own) `kv` holds, the next token at position
// `pos`; it stops at the model's end-of-sequence token and rewinds `kv` to
// what it held. Each next token attends to the same prefix KV and every token after it.
Generation GreedyContinue(Model& model, const Tokenizer& tok, const at::Tensor& first, RewindableKv& kv,
                                    int64_t pos, int max_new_tokens);

// Scores documents as lm-eval's HF backend does: context = prefix + doc.text,
// continuation = " " + choice; context tokens and whole-string tokens are
// encoded without special tokens and the continuation is the tail of the whole
// encoding past the context's length. The prefix KV is computed once and the
// context KV once per document; each choice then runs only its own tokens.
class Scorer {
 public:
  // `select` chooses which prefix KV each layer of a document attends to
  // (everything by default). With a `codec`, documents attend to what a
  // store with that codec serves: the prefix's whole chunks
  // (select.chunk_tokens) computed once, encoded and decoded
  // (codec/kv_codec_tensor.h), and the tokens after the last whole chunk a
  // document shares computed over them, as a store-backed request does.
  Scorer(Model& model, const Tokenizer& tok, const SelectorOptions& select = {}, KvCodec codec = KvCodec::kNone);

  // Makes `prefix` the text in front of every later document.
  Status SetPrefix(const std::string& prefix);
  // Prefix tokens whose KV is held.
  int64_t prefix_tokens() const { return static_cast<int64_t>(prefix_ids_.size()); }
  // Errors: text that is not UTF-8, a context longer than the model's window.
  StatusOr<DocScore> Score(const Doc& doc);
  // Greedy decoding after prefix + doc.text of up to `max_new_tokens` tokens,
  // stopping at the end-of-sequence token: the first from the context's last
  // logits, each next over the same selected prefix KV (chosen once per layer
  // from the context's queries) and every token after it. Errors as Score's,
  // and a context plus max_new_tokens longer than the model's window.
  StatusOr<Generation> Generate(const Doc& doc, int max_new_tokens);
  // What selection did over the documents scored since SetPrefix.
  const SelectionCounters& selection() const { return counters_; }
  // On: every layer selection is also scored against H2O's exact per-head
  // top-k from the same question rows over every prefix key (the paper's
  // Fig. 5 recall; selection().Recall()). Costs one more H2O selection a layer.
  void MeasureRecall(bool on) { recall_ = on; }

 private:
  Model& model_;
  const Tokenizer& tok_;
  std::string prefix_;
  std::vector<int32_t> prefix_ids_;
  DenseKvCache cache_;
  int64_t held_ = 0;  // cache_'s first held_ positions hold the prefix's KV; the rest, a document's
  SelectorOptions select_;
  KvCodec codec_;
  SelectionCounters counters_;
  bool recall_ = false;
  // With a codec: the prefix's whole chunks as a store serves them (encoded,
  // decoded), per layer [heads, whole-chunk tokens, dim].
  std::vector<at::Tensor> stored_k_, stored_v_;
  // The static control: each layer's importance [Hq, P] from the prefix's own prefill.
  std::vector<at::Tensor> static_importance_;
  // Puts the held prefix's whole chunks through codec_ into stored_*, and
  // recomputes its partial last chunk over them.
  void StoreChunks();
  // Makes cache_ hold what a store-backed request sharing the prefix's first
  // m tokens attends to: the stored chunks within m, the rest computed over them.
  void ReuseStored(int64_t m);
  // What follows a document's context: given the context, the
  // log-probabilities after its last token, the KV it attended to and the
  // position after it.
  using Then = std::function<Status(const ScoredContext&, const at::Tensor&, RewindableKv&, int64_t)>;
  // Runs prefix + doc.text over the held prefix KV (selected per layer by
  // select_) with `extra` more positions to come, then `then`.
  Status Attend(const Doc& doc, int64_t extra, const Then& then);
};

}  // namespace impress
