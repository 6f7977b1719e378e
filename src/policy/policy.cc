#include "policy/policy.h"

#include <list>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace impress {
namespace {

class LruPolicy final : public CachePolicy {
 public:
  void Insert(uint64_t key) override {
    order_.push_front(key);
    where_[key] = order_.begin();
  }
  void Touch(uint64_t key) override { order_.splice(order_.begin(), order_, where_.at(key)); }
  void Erase(uint64_t key) override {
    order_.erase(where_.at(key));
    where_.erase(key);
  }
  std::optional<uint64_t> Victim(const std::function<bool(uint64_t)>& evictable) const override {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it)
      if (evictable(*it)) return *it;
    return std::nullopt;
  }
  size_t size() const override { return where_.size(); }

 private:
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

class LfuPolicy final : public CachePolicy {
 public:
  void Insert(uint64_t key) override { Set(key, 1); }
  void Touch(uint64_t key) override {
    auto it = rank_.find(key);
    uint64_t freq = std::get<0>(it->second) + 1;
    order_.erase(it->second);
    Set(key, freq);
  }
  void Erase(uint64_t key) override {
    order_.erase(rank_.at(key));
    rank_.erase(key);
  }
  std::optional<uint64_t> Victim(const std::function<bool(uint64_t)>& evictable) const override {
    for (const auto& r : order_)
      if (evictable(std::get<2>(r))) return std::get<2>(r);
    return std::nullopt;
  }
  size_t size() const override { return rank_.size(); }

 private:
  using Rank = std::tuple<uint64_t, uint64_t, uint64_t>;  // frequency, last access tick, key
  void Set(uint64_t key, uint64_t freq) {
    Rank r{freq, ++tick_, key};
    order_.insert(r);
    rank_[key] = r;
  }
  std::set<Rank> order_;  // least frequent, then least recent, first
  std::unordered_map<uint64_t, Rank> rank_;
  uint64_t tick_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<CachePolicy>> MakePolicy(const std::string& name) {
  if (name == "lru") return std::unique_ptr<CachePolicy>(new LruPolicy());
  if (name == "lfu") return std::unique_ptr<CachePolicy>(new LfuPolicy());
  return Status::InvalidArgument("unknown cache policy '" + name + "' (lru, lfu; score is a placement, ScorePlacement)");
}

}  // namespace impress
