#include "policy/score.h"

#include <algorithm>

namespace impress {

void ChunkScores::Important(uint64_t key, double share) {
  Entry& e = table_[key];
  e.share = e.seen ? keep_ * e.share + (1 - keep_) * share : share;
  e.seen = true;
}

double ChunkScores::Score(uint64_t key) const {
  auto it = table_.find(key);
  if (it == table_.end()) return 0;
  // Before any observation the share is unknown: count it as whole, so a
  // chunk is not ranked below ones known to be unimportant.
  return it->second.frequency * (it->second.seen ? it->second.share : 1.0);
}

void ChunkScores::Transfer(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) {
  std::vector<Entry> entries;
  for (uint64_t k : from) {
    auto it = table_.find(k);
    entries.push_back(it == table_.end() ? Entry{} : it->second);
  }
  auto score = [](const Entry& e) { return e.frequency * (e.seen ? e.share : 1.0); };
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) { return score(a) > score(b); });
  for (size_t i = 0; i < to.size() && i < entries.size(); ++i) table_[to[i]] = entries[i];
}

void ScorePolicy::Insert(uint64_t key) {
  Rank r{scores_->Score(key), key};
  order_.insert(r);
  rank_[key] = r;
}

void ScorePolicy::Touch(uint64_t key) {
  order_.erase(rank_.at(key));
  Insert(key);
}

void ScorePolicy::Erase(uint64_t key) {
  order_.erase(rank_.at(key));
  rank_.erase(key);
}

std::optional<uint64_t> ScorePolicy::Victim(const std::function<bool(uint64_t)>& evictable) const {
  for (const auto& r : order_)
    if (evictable(r.second)) return r.second;
  return std::nullopt;
}

}  // namespace impress
