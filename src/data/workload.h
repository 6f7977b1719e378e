// Few-shot prefixes and request streams, all derived from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/task.h"

namespace impress {

class Tokenizer;

// 0..n-1 in the order a seeded Fisher-Yates shuffle gives (the same on every
// platform and standard library).
std::vector<int> Permutation(int n, uint64_t seed);

// k distinct documents of `pool`, chosen by `seed` (same seed, same shots).
// REQUIRES: k <= pool.size()
std::vector<Doc> SampleShots(const std::vector<Doc>& pool, int k, uint64_t seed);

struct PrefixPoolOptions {
  int size = 8;               // distinct prefixes
  int target_tokens = 2048;   // each prefix is filled with examples up to this many tokens
  uint64_t seed = 1234;
};

struct PooledPrefix {
  std::string text;  // examples, each followed by "\n\n"
  int shots = 0;     // examples it holds
  int64_t tokens = 0;  // its length under the tokenizer, no special tokens
};

// Builds opt.size prefixes, each from its own seeded shuffle of `train`, as
// many whole examples as fit in opt.target_tokens. An error when not even one
// example fits.
StatusOr<std::vector<PooledPrefix>> BuildPrefixPool(const std::vector<Doc>& train, const Tokenizer& tok,
                                                    const PrefixPoolOptions& opt);

struct RequestStreamOptions {
  int requests = 100;
  double mean = 0.5;     // centre of the prefix choice, as a fraction of the pool
  double spread = 0.2;   // standard deviation, as a fraction of the pool
  uint64_t seed = 1234;
};

struct Request {
  int prefix = 0;  // index into the prefix pool
  int doc = 0;     // index into the evaluation documents
};

// Requests whose prefix index follows a normal distribution over the pool
// (redrawn when it falls outside) and whose documents walk a seeded
// permutation of the evaluation split.
std::vector<Request> MakeRequestStream(int pool_size, int num_docs, const RequestStreamOptions& opt);

}  // namespace impress
