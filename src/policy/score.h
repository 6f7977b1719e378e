// IMPRESS's score-based cache ranking (docs/paper.md §3): a chunk's score is
// its access frequency times the moving average of the share of its KV that
// was important on each access. Scores outlive residency: a chunk read from
// disk again keeps its history.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/policy.h"

namespace impress {

class ChunkScores {
 public:
  // `keep`: weight of the past in the moving average of the important share.
  explicit ChunkScores(double keep = 0.5) : keep_(keep) {}
  void Access(uint64_t key) { table_[key].frequency += 1; }
  // The share (0..1) of the chunk's tokens the last access found important.
  void Important(uint64_t key, double share);
  double Score(uint64_t key) const;
  // Gives `to` the histories of `from`, highest score first: to[0] gets the
  // best of from's. For a reordered copy whose chunks are sorted by importance.
  void Transfer(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to);
  size_t size() const { return table_.size(); }
  // Memory the table's entries hold (key, frequency, average).
  int64_t bytes() const { return static_cast<int64_t>(table_.size() * (sizeof(uint64_t) + sizeof(Entry))); }

 private:
  struct Entry {
    double frequency = 0;
    double share = 0;
    bool seen = false;  // share holds at least one observation
  };
  double keep_;
  std::unordered_map<uint64_t, Entry> table_;
};

// A min-heap over one cache level's entries by their score in `scores`
// (an ordered set, so that a changed score is re-ranked in O(log n)). Touch
// re-reads the key's score. Ties go to the lower key.
class ScorePolicy final : public CachePolicy {
 public:
  explicit ScorePolicy(const ChunkScores* scores) : scores_(scores) {}
  void Insert(uint64_t key) override;
  void Touch(uint64_t key) override;
  void Erase(uint64_t key) override;
  std::optional<uint64_t> Victim(const std::function<bool(uint64_t)>& evictable) const override;
  size_t size() const override { return rank_.size(); }

 private:
  using Rank = std::pair<double, uint64_t>;  // score, key
  const ChunkScores* scores_;
  std::set<Rank> order_;  // lowest score first
  std::unordered_map<uint64_t, Rank> rank_;
};

}  // namespace impress
