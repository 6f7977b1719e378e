// Hugging Face tokenizer.json, BPE models: byte-level (GPT-2, OPT, SmolLM2)
// and SentencePiece-style with byte fallback (Llama-2). Produces the same ids
// as the `tokenizers` library running the same file.
//
// Pipeline, as the library runs it: split out added tokens (leftmost-longest),
// normalize each remaining piece, pre-tokenize it into words, BPE-merge each
// word, then apply the post-processor's template (BOS etc.) when asked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace impress {

class Tokenizer {
 public:
  // Parses `path`. Unsupported components (e.g. a Unigram model, an NFKC
  // normalizer) are an error naming the file and the component.
  static StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);
  ~Tokenizer();

  // Token ids of `text` (UTF-8). add_special_tokens applies the post-processor
  // template, as Hugging Face's encode(text, add_special_tokens=True) does.
  // Invalid UTF-8 is an error.
  StatusOr<std::vector<int32_t>> Encode(const std::string& text, bool add_special_tokens = true) const;
  // Text of `ids`, through the file's decoder; special tokens skipped.
  std::string Decode(const std::vector<int32_t>& ids) const;
  // Id of a token string (vocabulary or added token), or -1.
  int32_t TokenToId(const std::string& token) const;
  // Highest id + 1 over the vocabulary and added tokens.
  int32_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace impress
