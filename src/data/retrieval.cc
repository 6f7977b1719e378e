#include "data/retrieval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <set>

#include "data/workload.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

// Needle keys: common words, one needle each per haystack.
const std::vector<std::string>& Keys() {
  static const std::vector<std::string> k = {
      "amber",   "apple",    "arrow",    "autumn",  "badge",   "banana",  "basil",   "beacon",  "birch",
      "bison",   "blossom",  "bottle",   "bramble", "breeze",  "bronze",  "cabin",   "cactus",  "camel",
      "candle",  "canyon",   "carrot",   "castle",  "cedar",   "cherry",  "cinder",  "clover",  "cobalt",
      "comet",   "copper",   "coral",    "cotton",  "crane",   "crystal", "cypress", "daisy",   "delta",
      "desert",  "dolphin",  "dragon",   "eagle",   "ember",   "falcon",  "feather", "fern",    "fiddle",
      "forest",  "fossil",   "garnet",   "ginger",  "glacier", "granite", "harbor",  "hazel",   "heron",
      "honey",   "island",   "ivory",    "jasmine", "juniper", "kettle",  "lantern", "lemon",   "lilac",
      "linen",   "lotus",    "magnet",   "maple",   "marble",  "meadow",  "meteor",  "mint",    "mirror",
      "nectar",  "nickel",   "oasis",    "olive",   "onyx",    "orchid",  "otter",   "panda",   "parrot",
      "pebble",  "pepper",   "pigeon",   "pine",    "planet",  "plum",    "poppy",   "prairie", "quartz",
      "rabbit",  "raven",    "reef",     "river",   "robin",   "saffron", "salmon",  "sapphire", "scarlet",
      "shadow",  "silver",   "spruce",   "summit",  "sunset",  "thistle", "thunder", "tiger",   "timber",
      "topaz",   "tulip",    "tundra",   "velvet",  "violet",  "walnut",  "willow",  "winter",  "zephyr"};
  return k;
}

int64_t Tokens(const Tokenizer& tok, const std::string& text) {
  auto ids = tok.Encode(text, /*add_special_tokens=*/false);
  return ids.ok() ? static_cast<int64_t>(ids->size()) : 0;
}

std::string NeedleSentence(const Needle& n) { return "The secret code for " + n.key + " is " + n.value + "."; }

// One piece of a haystack: a filler sentence or a needle.
struct Piece {
  std::string text;
  bool needle = false;
};

std::string Join(const std::vector<Piece>& pieces) {
  std::string out;
  for (const Piece& p : pieces) out += (out.empty() ? "" : " ") + p.text;
  return out + "\n\n";
}

}  // namespace

std::string RetrievalQuestion(const std::string& key) {
  return "Question: What is the secret code for " + key + "?\nAnswer: The secret code for " + key + " is";
}

std::vector<std::string> RetrievalFiller(const std::vector<Doc>& piqa_train) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const Doc& d : piqa_train)
    for (std::string s : d.choices) {
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
      if (s.size() < 20 || s.size() > 200) continue;
      if (std::any_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '\n' || c == '\r'; }))
        continue;
      s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
      if (s.back() != '.' && s.back() != '!' && s.back() != '?') s += '.';
      if (seen.insert(s).second) out.push_back(s);
    }
  return out;
}

int NeedlesPerHaystack(const RetrievalOptions& opt) {
  return std::max(opt.choices, static_cast<int>(std::lround(opt.needles_per_1k * opt.haystack_tokens / 1000.0)));
}

namespace {

// One question per needle, in a seeded order; the other choices are values of
// other needles. Draws the gold positions from `rng`, after the haystack's own draws.
void AskQuestions(const RetrievalOptions& opt, int n, uint64_t seed, std::mt19937_64* rng, Haystack* hs) {
  for (int q : Permutation(n, seed ^ 0x94D049BB133111EBull)) {
    std::vector<int> others;
    for (int o : Permutation(n, seed + static_cast<uint64_t>(q) * 0xBF58476D1CE4E5B9ull))
      if (o != q && static_cast<int>(others.size()) < opt.choices - 1) others.push_back(o);
    Doc d;
    d.text = RetrievalQuestion(hs->needles[q].key);
    d.gold = static_cast<int>((*rng)() % static_cast<uint64_t>(opt.choices));
    for (int c = 0, k = 0; c < opt.choices; ++c)
      d.choices.push_back(c == d.gold ? hs->needles[q].value : hs->needles[others[k++]].value);
    hs->questions.push_back(std::move(d));
  }
}

// Filler sentences in a seeded order until the estimate, with the needles,
// reaches the budget.
StatusOr<std::vector<std::string>> FillerFor(const std::vector<std::string>& filler, const Tokenizer& tok,
                                             const RetrievalOptions& opt, const Haystack& hs, uint64_t seed) {
  const std::vector<int> order = Permutation(static_cast<int>(filler.size()), seed ^ 0xD1B54A32D192ED03ull);
  int64_t estimate = 1;  // "\n\n"
  for (const Needle& nd : hs.needles) estimate += Tokens(tok, " " + NeedleSentence(nd));
  std::vector<std::string> fill;
  for (size_t i = 0; estimate < opt.haystack_tokens; ++i) {
    if (i == order.size()) return Status::InvalidArgument("retrieval: the filler is too short for the haystack");
    fill.push_back(filler[order[i]]);
    estimate += Tokens(tok, " " + fill.back());
  }
  return fill;
}

// Haystack h of a set: its needles, its text within the budget, its questions.
StatusOr<Haystack> MakeHaystack(const std::vector<std::string>& filler, const Tokenizer& tok,
                                const RetrievalOptions& opt, int n, int h) {
  const uint64_t seed = opt.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(h + 1);
  std::mt19937_64 rng(seed);
  Haystack hs;
  const std::vector<int> key_order = Permutation(static_cast<int>(Keys().size()), seed ^ 0x5851F42D4C957F2Dull);
  std::set<int> used_values;
  for (int i = 0; i < n; ++i) {
    int v;
    do v = 1000 + static_cast<int>(rng() % 9000); while (!used_values.insert(v).second);
    hs.needles.push_back({Keys()[key_order[i]], std::to_string(v)});
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> fill, FillerFor(filler, tok, opt, hs, seed));
  // Needle i goes after filler sentence depth[i] (seeded, sorted).
  std::vector<int> depth(n);
  for (int& d : depth) d = static_cast<int>(rng() % (fill.size() + 1));
  std::sort(depth.begin(), depth.end());
  std::vector<Piece> pieces;
  size_t next = 0;
  for (size_t f = 0; f <= fill.size(); ++f) {
    for (; next < depth.size() && depth[next] == static_cast<int>(f); ++next)
      pieces.push_back({NeedleSentence(hs.needles[next]), true});
    if (f < fill.size()) pieces.push_back({fill[f], false});
  }
  // Token boundaries merge across sentences: drop the last filler sentences until it fits.
  hs.text = Join(pieces);
  hs.tokens = Tokens(tok, hs.text);
  while (hs.tokens > opt.haystack_tokens) {
    auto last = std::find_if(pieces.rbegin(), pieces.rend(), [](const Piece& p) { return !p.needle; });
    if (last == pieces.rend()) return Status::InvalidArgument("retrieval: the needles alone exceed the haystack");
    pieces.erase(std::next(last).base());
    hs.text = Join(pieces);
    hs.tokens = Tokens(tok, hs.text);
  }
  AskQuestions(opt, n, seed, &rng, &hs);
  return hs;
}

}  // namespace

std::vector<TaskContext> HaystackContexts(std::vector<Haystack> hays) {
  std::vector<TaskContext> out;
  int line = 0;
  for (Haystack& h : hays) {
    TaskContext x{std::move(h.text), {}};
    for (Doc& q : h.questions) {
      x.lines.emplace_back();
      x.lines.back().line = ++line;
      x.lines.back().doc = std::move(q);
    }
    out.push_back(std::move(x));
  }
  return out;
}

StatusOr<std::vector<Haystack>> MakeHaystacks(const std::vector<std::string>& filler, const Tokenizer& tok,
                                              const RetrievalOptions& opt, int count) {
  const int n = NeedlesPerHaystack(opt);
  if (opt.choices < 2) return Status::InvalidArgument("retrieval: choices must be at least 2");
  if (n > static_cast<int>(Keys().size()))
    return Status::InvalidArgument("retrieval: " + std::to_string(n) + " needles per haystack, more than the " +
                                   std::to_string(Keys().size()) + " keys");
  if (filler.size() < 16) return Status::InvalidArgument("retrieval: too few filler sentences");
  std::vector<Haystack> out;
  for (int h = 0; h < count; ++h) {
    ASSIGN_OR_RETURN(Haystack hs, MakeHaystack(filler, tok, opt, n, h));
    out.push_back(std::move(hs));
  }
  return out;
}

}  // namespace impress
