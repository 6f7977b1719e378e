// The retrieval task: haystacks of real filler text holding "The secret code
// for <key> is <value>." needles, after RULER's multi-key needle in a haystack
// (niah_multikey), each with one question per needle scored as lm-eval scores
// multiple choice: the needle's value against other values of the same
// haystack. Every question needs different prefix tokens, so a selection
// that keeps the wrong ones answers wrongly. Generated from a seed; the
// filler is the repository's PIQA training solutions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/task.h"
#include "data/task_file.h"

namespace impress {

class Tokenizer;

struct RetrievalOptions {
  int64_t haystack_tokens = 2048;  // each haystack at most this many tokens (no special tokens)
  int needles_per_1k = 20;         // needles per 1,000 haystack tokens (at least `choices` per haystack)
  int choices = 4;                 // the gold value and choices - 1 other values of the same haystack
  uint64_t seed = 1234;
};

struct Needle {
  std::string key;    // a word of the fixed key list
  std::string value;  // a four-digit number, once in its haystack
};

struct Haystack {
  std::string text;             // filler sentences with the needles, then "\n\n" (the shared prefix)
  int64_t tokens = 0;           // its length under the tokenizer
  std::vector<Needle> needles;  // in the order they occur
  std::vector<Doc> questions;   // one per needle, in a seeded order
};

// Sentences for the filler: PIQA's solutions (the choices of `piqa_train`)
// without digits, each capitalised and ending in punctuation.
std::vector<std::string> RetrievalFiller(const std::vector<Doc>& piqa_train);

// Needles (and questions) in each haystack of opt.
int NeedlesPerHaystack(const RetrievalOptions& opt);

// `count` haystacks; haystack i depends on (opt, i) only. An error when the
// filler or the key list is too small for opt.
StatusOr<std::vector<Haystack>> MakeHaystacks(const std::vector<std::string>& filler, const Tokenizer& tok,
                                              const RetrievalOptions& opt, int count);

// The haystacks as a task file's contexts (data/task_file.h): each
// haystack's text and its questions as multiple-choice lines, numbered from 1
// across the haystacks in order.
std::vector<TaskContext> HaystackContexts(std::vector<Haystack> hays);

// The question that asks for `key`, as Doc::text.
std::string RetrievalQuestion(const std::string& key);

}  // namespace impress
