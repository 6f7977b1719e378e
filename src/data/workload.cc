#include "data/workload.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model/tokenizer.h"

namespace impress {
namespace {

int64_t CountTokens(const Tokenizer& tok, const std::string& text) {
  auto ids = tok.Encode(text, /*add_special_tokens=*/false);
  return ids.ok() ? static_cast<int64_t>(ids->size()) : 0;
}

}  // namespace

std::vector<int> Permutation(int n, uint64_t seed) {
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {  // Fisher-Yates with our own draw: portable across libstdc++ versions
    int j = static_cast<int>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(idx[i], idx[j]);
  }
  return idx;
}

std::vector<Doc> SampleShots(const std::vector<Doc>& pool, int k, uint64_t seed) {
  std::vector<int> idx = Permutation(static_cast<int>(pool.size()), seed);
  std::vector<Doc> out;
  for (int i = 0; i < k; ++i) out.push_back(pool[idx[i]]);
  return out;
}

StatusOr<std::vector<PooledPrefix>> BuildPrefixPool(const std::vector<Doc>& train, const Tokenizer& tok,
                                                    const PrefixPoolOptions& opt) {
  std::vector<PooledPrefix> pool;
  for (int p = 0; p < opt.size; ++p) {
    std::vector<int> order = Permutation(static_cast<int>(train.size()), opt.seed + 0x9E3779B97F4A7C15ull * (p + 1));
    PooledPrefix prefix;
    int64_t estimate = 0;
    for (int idx : order) {
      std::string example = FewShotExample(train[idx]) + "\n\n";
      int64_t n = CountTokens(tok, example);
      if (estimate + n > opt.target_tokens) break;
      prefix.text += example;
      estimate += n;
      ++prefix.shots;
    }
    // Token boundaries can merge across examples; trim until the exact count fits.
    prefix.tokens = CountTokens(tok, prefix.text);
    while (prefix.tokens > opt.target_tokens && prefix.shots > 0) {
      size_t cut = prefix.text.rfind("\n\n", prefix.text.size() - 3);
      prefix.text = cut == std::string::npos ? "" : prefix.text.substr(0, cut + 2);
      --prefix.shots;
      prefix.tokens = CountTokens(tok, prefix.text);
    }
    if (prefix.shots == 0)
      return Status::InvalidArgument("prefix pool: no example fits in " + std::to_string(opt.target_tokens) + " tokens");
    pool.push_back(std::move(prefix));
  }
  return pool;
}

std::vector<Request> MakeRequestStream(int pool_size, int num_docs, const RequestStreamOptions& opt) {
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<double> normal(opt.mean * (pool_size - 1), std::max(1e-9, opt.spread * pool_size));
  std::vector<int> docs = Permutation(num_docs, opt.seed ^ 0xD1B54A32D192ED03ull);
  std::vector<Request> out;
  for (int i = 0; i < opt.requests; ++i) {
    long p;
    do p = std::lround(normal(rng));
    while (p < 0 || p >= pool_size);
    out.push_back({static_cast<int>(p), docs[i % num_docs]});
  }
  return out;
}

}  // namespace impress
