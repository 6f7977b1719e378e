#include "model/tokenizer.h"

#include "common/utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <queue>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace impress {
namespace {

using nlohmann::json;
using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

// GPT-2's reversible byte <-> printable-character map.
struct ByteMap {
  std::string to_char[256];
  std::unordered_map<std::string, uint8_t> to_byte;
  ByteMap() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_char[b] = EncodeUtf8(printable ? b : 256 + extra++);
      to_byte[to_char[b]] = static_cast<uint8_t>(b);
    }
  }
};
const ByteMap& Bytes() {
  static const ByteMap kMap;
  return kMap;
}

// ---- Regex (PCRE2, Unicode properties, JIT) ---------------------------------

class Regex {
 public:
  static StatusOr<std::shared_ptr<Regex>> Compile(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof(buf));
      return Status::InvalidArgument("regex '" + pattern + "' does not compile: " + reinterpret_cast<char*>(buf));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    auto r = std::shared_ptr<Regex>(new Regex());
    r->code_ = code;
    return r;
  }
  ~Regex() { pcre2_code_free(code_); }

  // Non-overlapping, non-empty matches, left to right. REQUIRES: valid UTF-8.
  std::vector<Span> FindAll(std::string_view s) const {
    std::vector<Span> out;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    size_t pos = 0;
    while (pos <= s.size()) {
      int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos, PCRE2_NO_UTF_CHECK, md,
                           nullptr);
      if (rc < 0) break;
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (e == b) {  // empty match: step one character
        pos = b + std::max<size_t>(1, b < s.size() ? Utf8Len(static_cast<unsigned char>(s[b])) : 1);
        continue;
      }
      out.push_back({b, e});
      pos = e;
    }
    pcre2_match_data_free(md);
    return out;
  }

 private:
  Regex() = default;
  pcre2_code* code_ = nullptr;
};

// ---- Splitting with the library's delimiter behaviours ----------------------

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

StatusOr<Behavior> ParseBehavior(const std::string& s) {
  if (s == "Removed") return Behavior::kRemoved;
  if (s == "Isolated") return Behavior::kIsolated;
  if (s == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::kMergedWithNext;
  if (s == "Contiguous") return Behavior::kContiguous;
  return Status::InvalidArgument("unknown split behavior '" + s + "'");
}

// Splits `s` given the delimiter matches, following tokenizers' SplitDelimiterBehavior.
std::vector<std::string> SplitBy(const std::string& s, const std::vector<Span>& matches, Behavior behavior,
                                 bool invert) {
  std::vector<std::pair<Span, bool>> parts;  // covers s; bool = is delimiter
  size_t last = 0;
  for (const auto& m : matches) {
    if (m.first > last) parts.push_back({{last, m.first}, invert});
    parts.push_back({m, !invert});
    last = m.second;
  }
  if (last < s.size()) parts.push_back({{last, s.size()}, invert});

  std::vector<Span> out;
  switch (behavior) {
    case Behavior::kIsolated:
      for (auto& [sp, m] : parts) out.push_back(sp);
      break;
    case Behavior::kRemoved:
      for (auto& [sp, m] : parts) if (!m) out.push_back(sp);
      break;
    case Behavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (auto& [sp, m] : parts) {
        if (m && !prev_match && !out.empty()) out.back().second = sp.second;
        else out.push_back(sp);
        prev_match = m;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool prev_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !prev_match && !out.empty()) out.back().first = it->first.first;
        else out.push_back(it->first);
        prev_match = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case Behavior::kContiguous: {
      bool prev_match = false;
      bool first = true;
      for (auto& [sp, m] : parts) {
        if (!first && m == prev_match) out.back().second = sp.second;
        else out.push_back(sp);
        prev_match = m;
        first = false;
      }
      break;
    }
  }
  std::vector<std::string> pieces;
  for (const auto& sp : out)
    if (sp.second > sp.first) pieces.push_back(s.substr(sp.first, sp.second - sp.first));
  return pieces;
}

// Each character for which `pred` holds is a match.
std::vector<Span> CharMatches(const std::string& s, const std::function<bool(std::string_view)>& pred) {
  std::vector<Span> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::max<size_t>(1, Utf8Len(static_cast<unsigned char>(s[i])));
    if (pred(std::string_view(s).substr(i, n))) out.push_back({i, i + n});
    i += n;
  }
  return out;
}

std::vector<Span> StringMatches(const std::string& s, const std::string& needle) {
  std::vector<Span> out;
  if (needle.empty()) return out;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size()))
    out.push_back({p, p + needle.size()});
  return out;
}

std::string ReplaceAll(const std::string& s, const std::vector<Span>& matches, const std::string& with) {
  std::string out;
  size_t last = 0;
  for (const auto& m : matches) {
    out.append(s, last, m.first - last);
    out += with;
    last = m.second;
  }
  out.append(s, last, std::string::npos);
  return out;
}

// A {"String": ...} or {"Regex": ...} pattern.
struct Pattern {
  std::string literal;
  std::shared_ptr<Regex> regex;
  std::vector<Span> Find(const std::string& s) const { return regex ? regex->FindAll(s) : StringMatches(s, literal); }
};

StatusOr<Pattern> ParsePattern(const json& j) {
  Pattern p;
  if (j.contains("String") && j["String"].is_string()) {
    p.literal = j["String"].get<std::string>();
  } else if (j.contains("Regex") && j["Regex"].is_string()) {
    ASSIGN_OR_RETURN(p.regex, Regex::Compile(j["Regex"].get<std::string>()));
  } else {
    return Status::InvalidArgument("pattern must be {\"String\": ...} or {\"Regex\": ...}");
  }
  return p;
}

// ---- Normalizers ------------------------------------------------------------

using Normalizer = std::function<std::string(const std::string&)>;

StatusOr<Normalizer> ParseNormalizer(const json& j) {
  if (j.is_null()) return Normalizer([](const std::string& s) { return s; });
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<Normalizer> parts;
    for (const auto& n : j.value("normalizers", json::array())) {
      ASSIGN_OR_RETURN(Normalizer p, ParseNormalizer(n));
      parts.push_back(std::move(p));
    }
    return Normalizer([parts](const std::string& s) {
      std::string out = s;
      for (const auto& p : parts) out = p(out);
      return out;
    });
  }
  if (type == "Prepend") {
    std::string pre = j.value("prepend", "");
    return Normalizer([pre](const std::string& s) { return s.empty() ? s : pre + s; });
  }
  if (type == "Replace") {
    ASSIGN_OR_RETURN(Pattern pat, ParsePattern(j.value("pattern", json::object())));
    std::string content = j.value("content", "");
    return Normalizer([pat, content](const std::string& s) { return ReplaceAll(s, pat.Find(s), content); });
  }
  if (type == "Strip") {
    bool left = j.value("strip_left", true), right = j.value("strip_right", true);
    return Normalizer([left, right](const std::string& s) {
      const char* ws = " \t\n\r\f\v";
      size_t b = left ? s.find_first_not_of(ws) : 0;
      if (b == std::string::npos) return std::string();
      size_t e = right ? s.find_last_not_of(ws) + 1 : s.size();
      return s.substr(b, e - b);
    });
  }
  return Status::InvalidArgument("normalizer type '" + type + "' is not supported");
}

// ---- Pre-tokenizers ---------------------------------------------------------

struct Piece {
  std::string text;
  bool at_start;  // begins at offset 0 of the original input
};
using PreTokenizer = std::function<std::vector<Piece>(std::vector<Piece>)>;

// Applies `split` to every piece; only a piece's first output keeps at_start.
template <typename F>
std::vector<Piece> EachPiece(const std::vector<Piece>& in, F split) {
  std::vector<Piece> out;
  for (const auto& p : in) {
    bool first = true;
    for (auto& s : split(p)) {
      out.push_back({std::move(s), p.at_start && first});
      first = false;
    }
  }
  return out;
}

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ByteLevel: GPT-2's split (unless use_regex is off), an optional prefix
// space, then each byte as its printable stand-in.
StatusOr<PreTokenizer> ByteLevelPreTokenizer(const json& j) {
  bool prefix = j.value("add_prefix_space", false), use_regex = j.value("use_regex", true);
  ASSIGN_OR_RETURN(std::shared_ptr<Regex> re, Regex::Compile(kGpt2Pattern));
  return PreTokenizer([prefix, use_regex, re](std::vector<Piece> in) {
    auto split = EachPiece(in, [&](const Piece& p) {
      std::string s = p.text;
      if (prefix && (s.empty() || s[0] != ' ')) s = " " + s;
      return use_regex ? SplitBy(s, re->FindAll(s), Behavior::kIsolated, false) : std::vector<std::string>{s};
    });
    for (auto& p : split) {
      std::string mapped;
      for (unsigned char c : p.text) mapped += Bytes().to_char[c];
      p.text = std::move(mapped);
    }
    return split;
  });
}

// Metaspace: spaces as the replacement character, prepended per the scheme,
// split before each replacement when `split`.
StatusOr<PreTokenizer> MetaspacePreTokenizer(const json& j) {
  std::string rep = j.value("replacement", "\xE2\x96\x81");
  std::string scheme = j.value("prepend_scheme", j.value("add_prefix_space", true) ? "always" : "never");
  bool split = j.value("split", true);
  if (scheme != "always" && scheme != "first" && scheme != "never")
    return Status::InvalidArgument("Metaspace prepend_scheme '" + scheme + "' is not supported");
  return PreTokenizer([rep, scheme, split](std::vector<Piece> in) {
    return EachPiece(in, [&](const Piece& p) {
      std::string s = ReplaceAll(p.text, StringMatches(p.text, " "), rep);
      bool starts = s.compare(0, rep.size(), rep) == 0;
      if (!starts && (scheme == "always" || (scheme == "first" && p.at_start))) s = rep + s;
      return split ? SplitBy(s, StringMatches(s, rep), Behavior::kMergedWithNext, false)
                   : std::vector<std::string>{s};
    });
  });
}

StatusOr<PreTokenizer> ParsePreTokenizer(const json& j) {
  if (j.is_null()) return PreTokenizer([](std::vector<Piece> p) { return p; });
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<PreTokenizer> parts;
    for (const auto& n : j.value("pretokenizers", json::array())) {
      ASSIGN_OR_RETURN(PreTokenizer p, ParsePreTokenizer(n));
      parts.push_back(std::move(p));
    }
    return PreTokenizer([parts](std::vector<Piece> p) {
      for (const auto& f : parts) p = f(std::move(p));
      return p;
    });
  }
  if (type == "ByteLevel") return ByteLevelPreTokenizer(j);
  if (type == "Metaspace") return MetaspacePreTokenizer(j);
  if (type == "Digits") {
    Behavior b = j.value("individual_digits", false) ? Behavior::kIsolated : Behavior::kContiguous;
    return PreTokenizer([b](std::vector<Piece> in) {
      return EachPiece(in, [&](const Piece& p) {
        auto digit = [](std::string_view c) { return c.size() == 1 && c[0] >= '0' && c[0] <= '9'; };
        return SplitBy(p.text, CharMatches(p.text, digit), b, false);
      });
    });
  }
  if (type == "Split") {
    ASSIGN_OR_RETURN(Pattern pat, ParsePattern(j.value("pattern", json::object())));
    ASSIGN_OR_RETURN(Behavior b, ParseBehavior(j.value("behavior", "Isolated")));
    bool invert = j.value("invert", false);
    return PreTokenizer([pat, b, invert](std::vector<Piece> in) {
      return EachPiece(in, [&](const Piece& p) { return SplitBy(p.text, pat.Find(p.text), b, invert); });
    });
  }
  return Status::InvalidArgument("pre_tokenizer type '" + type + "' is not supported");
}

// ---- BPE model --------------------------------------------------------------

struct Bpe {
  std::unordered_map<std::string, int32_t> vocab;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (a,b) -> (rank, merged id)
  int32_t unk_id = -1;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;

  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  void Tokenize(const std::string& word, std::vector<int32_t>* out) const {
    if (ignore_merges) {
      auto it = vocab.find(word);
      if (it != vocab.end()) {
        out->push_back(it->second);
        return;
      }
    }
    std::vector<int32_t> sym;
    bool last_unk = false;
    for (size_t i = 0; i < word.size();) {
      size_t n = std::max<size_t>(1, Utf8Len(static_cast<unsigned char>(word[i])));
      std::string c = word.substr(i, n);
      i += n;
      auto it = vocab.find(c);
      if (it != vocab.end()) {
        sym.push_back(it->second);
        last_unk = false;
        continue;
      }
      if (byte_fallback) {
        std::vector<int32_t> bytes;
        for (unsigned char b : c) {
          char name[8];
          std::snprintf(name, sizeof(name), "<0x%02X>", b);
          auto bt = vocab.find(name);
          if (bt == vocab.end()) break;
          bytes.push_back(bt->second);
        }
        if (bytes.size() == c.size()) {
          sym.insert(sym.end(), bytes.begin(), bytes.end());
          last_unk = false;
          continue;
        }
      }
      if (unk_id < 0) continue;  // no unk token: the library drops the character
      if (!(fuse_unk && last_unk)) sym.push_back(unk_id);
      last_unk = true;
    }
    Merge(&sym);
    out->insert(out->end(), sym.begin(), sym.end());
  }

  // Applies merges lowest rank first (ties: leftmost), as the library does.
  void Merge(std::vector<int32_t>* sym) const {
    const int n = static_cast<int>(sym->size());
    if (n < 2) return;
    std::vector<int32_t> id = *sym;
    std::vector<int> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (int i = 0; i < n; ++i) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    struct Cand {
      int32_t rank;
      int pos;
      int32_t new_id;
      bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
    auto push = [&](int pos) {
      if (pos < 0 || next[pos] < 0) return;
      auto it = merges.find(Key(id[pos], id[next[pos]]));
      if (it != merges.end()) queue.push({it->second.first, pos, it->second.second});
    };
    for (int i = 0; i + 1 < n; ++i) push(i);
    while (!queue.empty()) {
      Cand top = queue.top();
      queue.pop();
      if (!alive[top.pos] || next[top.pos] < 0) continue;
      auto it = merges.find(Key(id[top.pos], id[next[top.pos]]));
      if (it == merges.end() || it->second.second != top.new_id) continue;
      int right = next[top.pos];
      id[top.pos] = top.new_id;
      alive[right] = false;
      next[top.pos] = next[right];
      if (next[right] >= 0) prev[next[right]] = top.pos;
      push(prev[top.pos]);
      push(top.pos);
    }
    sym->clear();
    for (int i = 0; i >= 0; i = next[i]) sym->push_back(id[i]);
  }
};

// ---- Post-processor and decoder ---------------------------------------------

using PostProcessor = std::function<std::vector<int32_t>(std::vector<int32_t>)>;

StatusOr<PostProcessor> ParsePostProcessor(const json& j) {
  if (j.is_null()) return PostProcessor([](std::vector<int32_t> ids) { return ids; });
  const std::string type = j.value("type", "");
  if (type == "ByteLevel") return PostProcessor([](std::vector<int32_t> ids) { return ids; });
  if (type == "Sequence") {
    std::vector<PostProcessor> parts;
    for (const auto& n : j.value("processors", json::array())) {
      ASSIGN_OR_RETURN(PostProcessor p, ParsePostProcessor(n));
      parts.push_back(std::move(p));
    }
    return PostProcessor([parts](std::vector<int32_t> ids) {
      for (const auto& p : parts) ids = p(std::move(ids));
      return ids;
    });
  }
  if (type == "TemplateProcessing") {
    std::vector<std::vector<int32_t>> items;  // empty vector = the sequence itself
    const json& special = j.value("special_tokens", json::object());
    for (const auto& item : j.value("single", json::array())) {
      if (item.contains("Sequence")) {
        items.push_back({});
      } else if (item.contains("SpecialToken")) {
        std::string id = item["SpecialToken"].value("id", "");
        if (!special.contains(id) || !special[id].contains("ids"))
          return Status::InvalidArgument("TemplateProcessing names special token '" + id + "' without ids");
        items.push_back(special[id]["ids"].get<std::vector<int32_t>>());
      } else {
        return Status::InvalidArgument("TemplateProcessing item is neither Sequence nor SpecialToken");
      }
    }
    return PostProcessor([items](std::vector<int32_t> ids) {
      std::vector<int32_t> out;
      for (const auto& it : items) {
        if (it.empty()) out.insert(out.end(), ids.begin(), ids.end());
        else out.insert(out.end(), it.begin(), it.end());
      }
      return out;
    });
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    int32_t cls = j["cls"][1].get<int32_t>(), sep = j["sep"][1].get<int32_t>();
    return PostProcessor([cls, sep](std::vector<int32_t> ids) {
      ids.insert(ids.begin(), cls);
      ids.push_back(sep);
      return ids;
    });
  }
  return Status::InvalidArgument("post_processor type '" + type + "' is not supported");
}

using Decoder = std::function<std::vector<std::string>(std::vector<std::string>)>;

// The ByteLevel decoder: each character of the byte alphabet back to its byte.
std::vector<std::string> DecodeByteLevel(const std::string& s) {
  std::string bytes;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::max<size_t>(1, Utf8Len(static_cast<unsigned char>(s[i])));
    auto it = Bytes().to_byte.find(s.substr(i, n));
    if (it != Bytes().to_byte.end()) bytes += static_cast<char>(it->second);
    else bytes += s.substr(i, n);
    i += n;
  }
  return {Utf8Lossy(bytes)};
}

// The ByteFallback decoder: runs of <0xXX> tokens become their bytes.
std::vector<std::string> DecodeByteFallback(std::vector<std::string> t) {
  std::vector<std::string> out;
  std::string pending;
  auto flush = [&] {
    if (!pending.empty()) out.push_back(Utf8Lossy(pending));
    pending.clear();
  };
  for (auto& x : t) {
    if (x.size() == 6 && x.compare(0, 3, "<0x") == 0 && x[5] == '>') {
      pending += static_cast<char>(std::stoi(x.substr(3, 2), nullptr, 16));
    } else {
      flush();
      out.push_back(x);
    }
  }
  flush();
  return out;
}

StatusOr<Decoder> ParseDecoder(const json& j) {
  auto fuse = [](const std::vector<std::string>& t) {
    std::string s;
    for (const auto& x : t) s += x;
    return s;
  };
  if (j.is_null()) return Decoder([fuse](std::vector<std::string> t) { return std::vector<std::string>{fuse(t)}; });
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<Decoder> parts;
    for (const auto& n : j.value("decoders", json::array())) {
      ASSIGN_OR_RETURN(Decoder p, ParseDecoder(n));
      parts.push_back(std::move(p));
    }
    return Decoder([parts](std::vector<std::string> t) {
      for (const auto& p : parts) t = p(std::move(t));
      return t;
    });
  }
  if (type == "ByteLevel") return Decoder([fuse](std::vector<std::string> t) { return DecodeByteLevel(fuse(t)); });
  if (type == "Replace") {
    ASSIGN_OR_RETURN(Pattern pat, ParsePattern(j.value("pattern", json::object())));
    std::string content = j.value("content", "");
    return Decoder([pat, content](std::vector<std::string> t) {
      for (auto& x : t) x = ReplaceAll(x, pat.Find(x), content);
      return t;
    });
  }
  if (type == "ByteFallback") return Decoder(DecodeByteFallback);
  if (type == "Fuse") return Decoder([fuse](std::vector<std::string> t) { return std::vector<std::string>{fuse(t)}; });
  if (type == "Strip") {
    std::string content = j.value("content", " ");
    int start = j.value("start", 0), stop = j.value("stop", 0);
    return Decoder([content, start, stop](std::vector<std::string> t) {
      for (auto& x : t) {
        for (int k = 0; k < start && x.compare(0, content.size(), content) == 0; ++k) x.erase(0, content.size());
        for (int k = 0; k < stop && x.size() >= content.size() &&
                        x.compare(x.size() - content.size(), content.size(), content) == 0;
             ++k)
          x.erase(x.size() - content.size());
      }
      return t;
    });
  }
  if (type == "Metaspace") {
    std::string rep = j.value("replacement", "\xE2\x96\x81");
    return Decoder([rep](std::vector<std::string> t) {
      for (size_t i = 0; i < t.size(); ++i) {
        t[i] = ReplaceAll(t[i], StringMatches(t[i], rep), " ");
        if (i == 0 && !t[i].empty() && t[i][0] == ' ') t[i].erase(0, 1);
      }
      return t;
    });
  }
  return Status::InvalidArgument("decoder type '" + type + "' is not supported");
}

struct AddedToken {
  std::string content;
  int32_t id;
  bool special, lstrip, rstrip;
};

}  // namespace

// ---- Tokenizer ----------------------------------------------------------------

struct Tokenizer::Impl {
  Bpe bpe;
  std::vector<AddedToken> added;
  std::unordered_map<int32_t, std::string> id_to_token;
  std::unordered_map<int32_t, bool> special_ids;
  Normalizer normalize;
  PreTokenizer pre_tokenize;
  PostProcessor post_process;
  Decoder decode;
  int32_t vocab_size = 0;

  // The BPE model's vocabulary, merges and flags (`m` is the file's "model").
  Status ParseBpeModel(const json& m) {
    Bpe& bpe = this->bpe;
    for (auto& [tok, id] : m["vocab"].items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        return Status::InvalidArgument("model.vocab['" + tok + "'] is not a valid id");
      bpe.vocab[tok] = id.get<int32_t>();
      id_to_token[id.get<int32_t>()] = tok;
      vocab_size = std::max(vocab_size, id.get<int32_t>() + 1);
    }
    int32_t rank = 0;
    for (const auto& mg : m["merges"]) {
      std::string a, b;
      if (mg.is_string()) {  // "a b"
        const std::string s = mg.get<std::string>();
        size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) return Status::InvalidArgument("model.merges[" + std::to_string(rank) + "] is not 'a b'");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
        a = mg[0].get<std::string>();
        b = mg[1].get<std::string>();
      } else {
        return Status::InvalidArgument("model.merges[" + std::to_string(rank) + "] is neither 'a b' nor [a, b]");
      }
      auto ia = bpe.vocab.find(a), ib = bpe.vocab.find(b), im = bpe.vocab.find(a + b);
      if (ia == bpe.vocab.end() || ib == bpe.vocab.end() || im == bpe.vocab.end())
        return Status::InvalidArgument("model.merges[" + std::to_string(rank) + "] uses a token missing from the vocabulary");
      bpe.merges.emplace(Bpe::Key(ia->second, ib->second), std::make_pair(rank, im->second));
      ++rank;
    }
    bpe.fuse_unk = m.value("fuse_unk", false);
    bpe.byte_fallback = m.value("byte_fallback", false);
    bpe.ignore_merges = m.value("ignore_merges", false);
    if (m.contains("unk_token") && m["unk_token"].is_string()) {
      auto it = bpe.vocab.find(m["unk_token"].get<std::string>());
      if (it == bpe.vocab.end()) return Status::InvalidArgument("model.unk_token is not in the vocabulary");
      bpe.unk_id = it->second;
    }
    return Status::OK();
  }

  // The file's "added_tokens".
  Status ParseAddedTokens(const json& tokens) {
    for (const auto& a : tokens) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
        return Status::InvalidArgument("added_tokens entry needs integer 'id' and string 'content'");
      AddedToken t{a["content"].get<std::string>(), a["id"].get<int32_t>(), a.value("special", false),
                   a.value("lstrip", false), a.value("rstrip", false)};
      id_to_token[t.id] = t.content;
      special_ids[t.id] = t.special;
      vocab_size = std::max(vocab_size, t.id + 1);
      this->added.push_back(std::move(t));
    }
    return Status::OK();
  }

  // Splits `text` around added tokens (leftmost, then longest), honouring
  // lstrip/rstrip. Returns segments; an added token is a segment with id >= 0.
  std::vector<std::pair<std::string, int32_t>> SplitAdded(const std::string& text) const {
    std::vector<std::pair<std::string, int32_t>> out;
    size_t seg = 0, i = 0;
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    while (i < text.size()) {
      const AddedToken* best = nullptr;
      for (const auto& a : added)
        if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0 &&
            (best == nullptr || a.content.size() > best->content.size()))
          best = &a;
      if (best == nullptr) {
        ++i;
        continue;
      }
      size_t b = i, e = i + best->content.size();
      if (best->lstrip)
        while (b > seg && is_space(text[b - 1])) --b;
      if (best->rstrip)
        while (e < text.size() && is_space(text[e])) ++e;
      if (b > seg) out.push_back({text.substr(seg, b - seg), -1});
      out.push_back({best->content, best->id});
      seg = i = e;
    }
    if (seg < text.size()) out.push_back({text.substr(seg), -1});
    return out;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  auto fail = [&](const std::string& what) { return Status::InvalidArgument(path + ": " + what); };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    return fail(std::string("not valid JSON: ") + e.what());
  }
  try {
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return fail("missing object 'model'");
    const json& m = j["model"];
    const std::string mtype = m.value("type", "BPE");
    if (mtype != "BPE") return fail("model type '" + mtype + "' is not supported (BPE only)");
    if (!m.contains("vocab") || !m["vocab"].is_object()) return fail("model.vocab is missing or not an object");
    if (!m.contains("merges") || !m["merges"].is_array()) return fail("model.merges is missing or not an array");
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (m.contains(k) && m[k].is_string() && !m[k].get<std::string>().empty())
        return fail(std::string("model.") + k + " is not supported");
    if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0)
      return fail("BPE dropout is not supported");

    auto impl = std::make_unique<Impl>();
    const Status model = impl->ParseBpeModel(m);
    if (!model.ok()) return fail(model.message());
    const Status added = impl->ParseAddedTokens(j.value("added_tokens", json::array()));
    if (!added.ok()) return fail(added.message());
    auto wrap = [&](const char* what, const Status& s) { return fail(std::string(what) + ": " + s.message()); };
    auto norm = ParseNormalizer(j.value("normalizer", json()));
    if (!norm.ok()) return wrap("normalizer", norm.status());
    impl->normalize = *norm;
    auto pre = ParsePreTokenizer(j.value("pre_tokenizer", json()));
    if (!pre.ok()) return wrap("pre_tokenizer", pre.status());
    impl->pre_tokenize = *pre;
    auto post = ParsePostProcessor(j.value("post_processor", json()));
    if (!post.ok()) return wrap("post_processor", post.status());
    impl->post_process = *post;
    auto dec = ParseDecoder(j.value("decoder", json()));
    if (!dec.ok()) return wrap("decoder", dec.status());
    impl->decode = *dec;
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
  } catch (const json::exception& e) {
    return fail(std::string("malformed tokenizer: ") + e.what());
  }
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(const std::string& text, bool add_special_tokens) const {
  if (!ValidUtf8(text)) return Status::InvalidArgument("input text is not valid UTF-8");
  std::vector<int32_t> ids;
  size_t offset = 0;
  for (const auto& [seg, id] : impl_->SplitAdded(text)) {
    if (id >= 0) {
      ids.push_back(id);
    } else {
      std::string normalized = impl_->normalize(seg);
      std::vector<Piece> pieces = impl_->pre_tokenize({{normalized, offset == 0}});
      for (const auto& p : pieces) impl_->bpe.Tokenize(p.text, &ids);
    }
    offset += seg.size();
  }
  return add_special_tokens ? impl_->post_process(std::move(ids)) : ids;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    auto sp = impl_->special_ids.find(id);
    if (sp != impl_->special_ids.end() && sp->second) continue;
    auto it = impl_->id_to_token.find(id);
    if (it != impl_->id_to_token.end()) tokens.push_back(it->second);
  }
  std::string out;
  for (const auto& t : impl_->decode(std::move(tokens))) out += t;
  return out;
}

int32_t Tokenizer::TokenToId(const std::string& token) const {
  for (const auto& a : impl_->added)
    if (a.content == token) return a.id;
  auto it = impl_->bpe.vocab.find(token);
  return it == impl_->bpe.vocab.end() ? -1 : it->second;
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

}  // namespace impress
