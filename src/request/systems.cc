#include "request/systems.h"

#include "common/named.h"
#include "select/method.h"

namespace impress {
namespace system_name {
const char kRecomp[] = "recomp", kAs[] = "as", kH2oLru[] = "h2o-lru", kH2oLfu[] = "h2o-lfu",
           kImpressItf[] = "impress-itf", kImpressItfRo[] = "impress-itf-ro", kImpress[] = "impress",
           kRandom[] = "random", kStatic[] = "static", kDigest[] = "digest";
}  // namespace system_name

namespace {
using namespace system_name;

struct SystemRecipe {
  const char* name;
  bool paper;
  bool reuse;
  SelectorKind kind;
  PolicyKind policy;
  bool reorder;
};
const SystemRecipe kSystems[] = {
    {kRecomp, true, false, SelectorKind::kFull, PolicyKind::kLru, false},
    {kAs, true, true, SelectorKind::kFull, PolicyKind::kLru, false},
    {kH2oLru, true, true, SelectorKind::kH2O, PolicyKind::kLru, false},
    {kH2oLfu, true, true, SelectorKind::kH2O, PolicyKind::kLfu, false},
    {kImpressItf, true, true, SelectorKind::kItf, PolicyKind::kLfu, false},
    {kImpressItfRo, true, true, SelectorKind::kItf, PolicyKind::kLfu, true},
    {kImpress, true, true, SelectorKind::kItf, PolicyKind::kScore, true},
    // Control: k positions per layer drawn at random (select/random.cc).
    {kRandom, false, true, SelectorKind::kRandom, PolicyKind::kLru, false},
    // Control: the paper's static pre-identification (SPI), one importance per prefix from its own
    // prefill (select/importance.h SelfImportance); `eval` only so far.
    {kStatic, false, true, SelectorKind::kStatic, PolicyKind::kLru, false},
    // The project's own: chunks ranked by their key digests (select/digest.cc), cached by score.
    {kDigest, false, true, SelectorKind::kDigest, PolicyKind::kScore, false},
};

System FromRecipe(const SystemRecipe& r) {
  System s;
  s.name = r.name;
  s.paper = r.paper;
  s.reuse = r.reuse;
  s.select.kind = r.kind;
  s.policy = r.policy;
  s.reorder = r.reorder;
  const SelectionMethodInfo& m = MethodInfo(r.kind);
  s.served_from_store = m.make != nullptr;
  s.depends_on_retention = m.retaining;
  s.uses_probe_heads = m.probe_heads;
  s.reads_digests = m.digests;
  return s;
}

std::vector<std::string> NamesOf(bool paper_only) {
  std::vector<std::string> v;
  for (const System& s : Systems())
    if (s.paper || !paper_only) v.push_back(s.name);
  return v;
}

}  // namespace

const std::vector<System>& Systems() {
  static const std::vector<System> systems = [] {
    std::vector<System> v;
    for (const SystemRecipe& r : kSystems) v.push_back(FromRecipe(r));
    return v;
  }();
  return systems;
}

const std::vector<std::string>& SystemNames() {
  static const std::vector<std::string> names = NamesOf(false);
  return names;
}

const std::vector<std::string>& PaperSystemNames() {
  static const std::vector<std::string> names = NamesOf(true);
  return names;
}

bool AnyReadsDigests(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (StatusOr<System> s = ParseSystem(n); s.ok() && s->reads_digests) return true;
  return false;
}

StatusOr<System> ParseSystem(const std::string& name, const SelectorOptions& select) {
  ASSIGN_OR_RETURN(const size_t i, ParseNamed<size_t>(SystemNames(), name, "--system", "system"));
  RETURN_IF_ERROR(ParseImportanceShape(select.importance.window, select.importance.pool).status());
  System s = Systems()[i];
  const SelectorKind kind = s.select.kind;
  s.select = select;
  s.select.kind = kind;
  return s;
}

StatusOr<System> ParseSystem(const std::string& name, double retention, double alpha) {
  SelectorOptions select;
  select.retention = retention;
  select.alpha = alpha;
  return ParseSystem(name, select);
}

}  // namespace impress
