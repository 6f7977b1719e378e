// The random control: each layer keeps k prefix positions drawn uniformly
// from a seeded generator, the same for every head, and reads only the chunks
// holding them. What any importance must beat.
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "select/method.h"

namespace impress {
namespace {

class RandomMethod final : public RetainingMethod {
 public:
  explicit RandomMethod(const SelectorOptions& opt) : RetainingMethod(opt, ReadAhead::kNone) {}

 protected:
  // Layer l draws from (opt.seed, l); the caller makes opt.seed the
  // request's (ForRequest), so each request and layer draws its own.
  StatusOr<SelectedPrefix> SelectK(const LayerQkv& qkv, PrefixSource& src, int64_t k,
                                   SelectionObserver*) const override {
    const int l = qkv.layer;
    const int64_t p = src.tokens();
    std::mt19937_64 rng(opt_.seed + 0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(l + 1));
    std::vector<int64_t> pos(static_cast<size_t>(p));
    std::iota(pos.begin(), pos.end(), int64_t{0});
    for (int64_t i = 0; i < k; ++i) {  // partial Fisher-Yates with our own draw
      const int64_t j = i + static_cast<int64_t>(rng() % static_cast<uint64_t>(p - i));
      std::swap(pos[static_cast<size_t>(i)], pos[static_cast<size_t>(j)]);
    }
    pos.resize(static_cast<size_t>(k));
    std::sort(pos.begin(), pos.end());
    SelectedPrefix s;
    s.used = at::tensor(pos, at::kLong);
    RETURN_IF_ERROR(src.Gather(l, s.used, &s.kv.k, &s.kv.v));
    s.total = p;
    s.kept = k;
    return s;
  }

};

}  // namespace

std::unique_ptr<SelectionMethod> MakeRandomMethod(const SelectorOptions& opt) {
  return std::make_unique<RandomMethod>(opt);
}

}  // namespace impress
