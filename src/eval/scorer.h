// Log-likelihood scoring of multiple-choice documents behind a shared prefix,
// with lm-evaluation-harness's tokenization of (context, continuation) pairs.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "data/task.h"
#include "model/kv_provider.h"

namespace impress {

class Model;
class Tokenizer;

struct DocScore {
  std::vector<double> loglik;  // per choice: sum of log p(continuation token | everything before)
  int pred = 0;                // argmax loglik (lm-eval's acc)
  int pred_norm = 0;           // argmax loglik / len(choice) in characters (acc_norm)
};

// Scores documents as lm-eval's HF backend does: context = prefix + doc.text,
// continuation = " " + choice; context tokens and whole-string tokens are
// encoded without special tokens and the continuation is the tail of the whole
// encoding past the context's length. The prefix KV is computed once and the
// context KV once per document; each choice then runs only its own tokens.
class Scorer {
 public:
  Scorer(Model& model, const Tokenizer& tok);

  // Makes `prefix` the text in front of every later document.
  Status SetPrefix(const std::string& prefix);
  // Prefix tokens whose KV is held.
  int64_t prefix_tokens() const { return static_cast<int64_t>(prefix_ids_.size()); }
  // Errors: text that is not UTF-8, a context longer than the model's window.
  StatusOr<DocScore> Score(const Doc& doc);

 private:
  Model& model_;
  const Tokenizer& tok_;
  std::string prefix_;
  std::vector<int32_t> prefix_ids_;
  DenseKvCache cache_;
};

}  // namespace impress
