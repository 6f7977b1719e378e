#include "policy/placement.h"

#include "common/named.h"
#include "policy/score.h"

namespace impress {
namespace {

// LRU and LFU: rank, place at once, admit always.
class RankingPlacement final : public Placement {
 public:
  explicit RankingPlacement(const char* name) : name_(name) {}
  std::unique_ptr<CachePolicy> NewRanking() override { return *MakePolicy(name_); }

 private:
  const char* name_;
};

// IMPRESS's score policy (docs/paper.md §3): every tier ranks by the
// chunk's score, a chunk is placed once its important share is known, and
// it enters a full tier only past a lower score.
class ScorePlacement final : public Placement {
 public:
  std::unique_ptr<CachePolicy> NewRanking() override { return std::make_unique<ScorePolicy>(&scores_); }
  bool Accessed(uint64_t key) override {
    scores_.Access(key);
    return true;
  }
  bool PlacesOnObserve() const override { return true; }
  bool Admits(uint64_t key, uint64_t victim) const override { return scores_.Score(key) > scores_.Score(victim); }
  void Observed(uint64_t key, double share) override { scores_.Important(key, share); }
  void Transfer(const std::vector<uint64_t>& from, const std::vector<uint64_t>& to) override {
    scores_.Transfer(from, to);
  }
  int64_t bytes() const override { return scores_.bytes(); }

 private:
  ChunkScores scores_;
};

}  // namespace

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> names = {"lru", "lfu", "score"};
  return names;
}

StatusOr<PolicyKind> ParsePolicy(const std::string& name) {
  return ParseNamed<PolicyKind>(PolicyNames(), name, "--policy", "cache policy");
}

std::unique_ptr<Placement> MakePlacement(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kLru: return std::make_unique<RankingPlacement>("lru");
    case PolicyKind::kLfu: return std::make_unique<RankingPlacement>("lfu");
    case PolicyKind::kScore: return std::make_unique<ScorePlacement>();
  }
  IMPRESS_CHECK(false);
  return nullptr;
}

}  // namespace impress
