#include "engine/systems.h"

#include "common/named.h"

namespace impress {
namespace {

struct SystemRecipe {
  const char* name;
  bool reuse;
  SelectorKind kind;
  PolicyKind policy;
  bool reorder;
};
constexpr SystemRecipe kSystems[] = {
    {"recomp", false, SelectorKind::kFull, PolicyKind::kLru, false},
    {"as", true, SelectorKind::kFull, PolicyKind::kLru, false},
    {"h2o-lru", true, SelectorKind::kH2O, PolicyKind::kLru, false},
    {"h2o-lfu", true, SelectorKind::kH2O, PolicyKind::kLfu, false},
    {"impress-itf", true, SelectorKind::kItf, PolicyKind::kLfu, false},
    {"impress-itf-ro", true, SelectorKind::kItf, PolicyKind::kLfu, true},
    {"impress", true, SelectorKind::kItf, PolicyKind::kScore, true},
    // Control: k positions per layer drawn at random (select/random.cc).
    {"random", true, SelectorKind::kRandom, PolicyKind::kLru, false},
    // Control: the paper's static pre-identification (SPI), one importance per prefix from its own
    // prefill (select/importance.h SelfImportance); `eval` only so far.
    {"static", true, SelectorKind::kStatic, PolicyKind::kLru, false},
};

}  // namespace

const std::vector<std::string>& SystemNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const SystemRecipe& r : kSystems) v.push_back(r.name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& PaperSystemNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const SystemRecipe& r : kSystems)
      if (r.kind != SelectorKind::kRandom && r.kind != SelectorKind::kStatic) v.push_back(r.name);
    return v;
  }();
  return names;
}

StatusOr<System> ParseSystem(const std::string& name, double retention, double alpha) {
  ASSIGN_OR_RETURN(const size_t i, ParseNamed<size_t>(SystemNames(), name, "--system", "system"));
  const SystemRecipe& r = kSystems[i];
  System s;
  s.name = name;
  s.reuse = r.reuse;
  s.select.kind = r.kind;
  s.select.retention = retention;
  s.select.alpha = alpha;
  s.policy = r.policy;
  s.reorder = r.reorder;
  return s;
}

bool DependsOnRetention(const System& s) { return s.select.kind != SelectorKind::kFull; }
bool ServedFromStore(const System& s) { return s.select.kind != SelectorKind::kStatic; }
bool DependsOnItf(const System& s) { return s.select.kind == SelectorKind::kItf; }

}  // namespace impress
