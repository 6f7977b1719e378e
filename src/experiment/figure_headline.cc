#include "experiment/figure_headline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "common/units.h"

namespace impress {

Figure FigureFromJson(const nlohmann::json& j) {
  Figure f;
  f.name = j.at("name").get<std::string>();
  for (size_t i = 0; i < j.at("column_ids").size(); ++i)
    f.columns.push_back({j["column_ids"][i].get<std::string>(), j.at("columns")[i].get<std::string>()});
  for (const auto& r : j.at("rows")) f.rows.push_back(r.get<std::vector<nlohmann::json>>());
  for (const auto& n : j.at("notes")) f.notes.push_back(n.get<std::string>());
  return f;
}
namespace {

using Row = std::vector<nlohmann::json>;

// The figure's rows read by column id.
class Table {
 public:
  explicit Table(const Figure& f) : f_(f) {
    for (size_t i = 0; i < f.columns.size(); ++i) at_[f.columns[i].id] = i;
  }
  bool has(const std::string& id) const { return at_.count(id) > 0; }
  double num(const Row& r, const std::string& id) const { return r[at_.at(id)].get<double>(); }
  std::string str(const Row& r, const std::string& id) const {
    const nlohmann::json& v = r[at_.at(id)];
    return v.is_string() ? v.get<std::string>() : v.dump();
  }
  std::vector<double> all(const std::string& id) const {
    std::vector<double> out;
    for (const Row& r : f_.rows) out.push_back(num(r, id));
    return out;
  }
  // task -> [(system, value)], both in row order.
  using Systems = std::vector<std::pair<std::string, double>>;
  std::vector<std::pair<std::string, Systems>> ByTask(const std::string& system, const std::string& value) const {
    std::vector<std::pair<std::string, Systems>> out;
    for (const Row& r : f_.rows) {
      const std::string task = str(r, "task");
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& t) { return t.first == task; });
      if (it == out.end()) it = out.insert(out.end(), {task, {}});
      const std::string name = str(r, system);
      auto s = std::find_if(it->second.begin(), it->second.end(), [&](const auto& x) { return x.first == name; });
      if (s == it->second.end()) it->second.push_back({name, num(r, value)});
      else s->second = num(r, value);
    }
    return out;
  }
  // Each task's value of `system` (ByTask's).
  std::vector<double> OfSystem(const std::string& system, const std::string& value, const std::string& which) const {
    std::vector<double> out;
    for (const auto& [task, systems] : ByTask(system, value))
      for (const auto& [s, v] : systems)
        if (s == which) out.push_back(v);
    return out;
  }

 private:
  const Figure& f_;
  std::map<std::string, size_t> at_;
};

// "lo-hi" (each with `unit`), or one value when both print alike.
std::string Range(const std::vector<double>& v, const char* fmt = "%.2f", const std::string& unit = "") {
  if (v.empty()) return "";
  const std::string lo = Fmt(fmt, *std::min_element(v.begin(), v.end()));
  const std::string hi = Fmt(fmt, *std::max_element(v.begin(), v.end()));
  return lo == hi ? lo + unit : lo + unit + "-" + hi + unit;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace

std::string IoShareHeadline(const Figure& f) {
  std::vector<double> pct;
  for (double x : Table(f).all("io_share")) pct.push_back(100 * x);
  return f.rows.empty() ? "" : "as spends " + Range(pct, "%.0f", "%") + " of TTFT on I/O";
}

std::string HeadJaccardHeadline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  return "mean pairwise Jaccard " + Fmt("%.2f", Mean(t.all("jaccard_all_heads"))) + " (probe heads " +
         Fmt("%.2f", Mean(t.all("jaccard_probe_heads"))) + ") vs " + Fmt("%.2f", t.num(f.rows[0], "jaccard_random")) +
         " for random sets";
}

std::string SimilarityRatioHeadline(const Figure& f) {
  const Table t(f);
  std::vector<std::string> parts;
  for (const Row& r : f.rows)
    parts.push_back(Fmt("%.2f", t.num(r, "selection_ratio")) + ": " + Fmt("%.2f", t.num(r, "jaccard_all_heads")) +
                    " vs random " + Fmt("%.2f", t.num(r, "jaccard_random")));
  return Join(parts, "; ");
}

std::string ChunkImportanceHeadline(const Figure& f) {
  for (const auto& n : f.notes)
    if (n.is_string() && n.get<std::string>().rfind("mean important share", 0) == 0) return n.get<std::string>();
  return "";
}

std::string SpiHeadline(const Figure& f) {
  const Table t(f);
  std::map<std::string, const Row*> at;
  for (const Row& r : f.rows)
    if (t.str(r, "task") == "retrieval" && std::fabs(t.num(r, "retention") - 0.25) < 1e-9) at[t.str(r, "system")] = &r;
  for (const char* s : {"static", "random", "h2o-lru", "impress-itf (token)"})
    if (!at.count(s)) return "";
  const Row &s = *at["static"], &rnd = *at["random"], &h = *at["h2o-lru"], &i = *at["impress-itf (token)"];
  return "retrieval at 25%: recall of H2O's top-k static " + Fmt("%.2f", t.num(s, "recall")) + ", impress-itf " +
         Fmt("%.2f", t.num(i, "recall")) + "; acc static " + Fmt("%.3f", t.num(s, "acc")) + ", random " +
         Fmt("%.3f", t.num(rnd, "acc")) + ", impress-itf " + Fmt("%.3f", t.num(i, "acc")) + ", h2o-lru " +
         Fmt("%.3f", t.num(h, "acc")) + " (full KV " + Fmt("%.3f", t.num(h, "acc_recomp")) + ")";
}

std::string Fig15Headline(const Figure& f) {
  const Table t(f);
  const std::vector<double> d = t.all("itf_minus_h2o_points");
  if (d.empty()) return "";
  const auto within = std::count_if(d.begin(), d.end(), [](double x) { return std::fabs(x) <= 1; });
  std::string text = "impress-itf minus h2o-lru: mean " + Fmt("%+.2f", Mean(d)) + " points, within 1 point in " +
                     std::to_string(within) + " of " + std::to_string(d.size()) + " cells";
  if (t.has("h2o_lru_agrees"))
    text += "; answers kept from recomp: h2o-lru " + Fmt("%.2f", Mean(t.all("h2o_lru_agrees"))) + ", impress-itf " +
            Fmt("%.2f", Mean(t.all("impress_itf_agrees")));
  return text;
}

std::string Fig16Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  return "impress " + Range(t.OfSystem("system", "h2o_lfu_over_system", "impress"), "%.2f", "x") +
         " lower than h2o-lfu; as " + Range(t.OfSystem("system", "h2o_lfu_over_system", "as"), "%.2f", "x") +
         " lower than h2o-lfu too";
}

std::string Fig17Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  return "impress " + Range(t.OfSystem("system", "h2o_lfu_over_system_io", "impress"), "%.2f", "x") +
         " less I/O time than h2o-lfu";
}

std::string TailHeadline(const Figure& f) {
  const auto tasks = Table(f).ByTask("system", "ttft_p99_ms");
  if (tasks.empty()) return "";
  auto it = std::find_if(tasks.begin(), tasks.end(), [](const auto& x) { return x.first == "rte"; });
  if (it == tasks.end()) it = tasks.begin();
  std::vector<std::string> parts;
  for (const auto& [s, v] : it->second) parts.push_back(s + " " + Fmt("%.0f", v));
  return it->first + ": " + Join(parts, ", ") + " ms";
}

std::string Fig18Headline(const Figure& f) {
  const Table t(f);
  std::vector<std::string> tasks, parts;
  for (const Row& r : f.rows)
    if (std::find(tasks.begin(), tasks.end(), t.str(r, "task")) == tasks.end()) tasks.push_back(t.str(r, "task"));
  for (const std::string& task : tasks) {
    std::vector<std::string> steps;
    for (const Row& r : f.rows)
      if (t.str(r, "task") == task) steps.push_back(Fmt("%.0f", t.num(r, "ttft_mean_ms")));
    parts.push_back(task + " " + Join(steps, " > "));
  }
  return "mean TTFT ms, h2o-lfu > +ITF > +RO > All: " + Join(parts, "; ");
}

std::string Fig19Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  return "mean per-layer load ratio " + Range(t.all("load_ratio_mean")) + ", fallback share " +
         Range(t.all("fallback_share"));
}

std::string Fig20Headline(const Figure& f) {
  return f.rows.empty() ? "" : Range(Table(f).all("without_over_with_ro"), "%.2f", "x") + " fewer chunks with RO";
}

std::string Fig21Headline(const Figure& f) {
  const Table t(f);
  std::vector<std::string> parts;
  for (const Row& r : f.rows)
    parts.push_back(t.str(r, "task") + " " + Fmt("%.2f", t.num(r, "kv_hit_gpu_lfu")) + " -> " +
                    Fmt("%.2f", t.num(r, "kv_hit_gpu_score")));
  return Join(parts, "; ");
}

std::string Fig22Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  const Row &a = f.rows.front(), &b = f.rows.back();
  return "alpha " + Fmt("%g", t.num(a, "alpha")) + " -> " + Fmt("%g", t.num(b, "alpha")) + ": TTFT " +
         Fmt("%.0f", t.num(a, "ttft_mean_ms")) + " -> " + Fmt("%.0f", t.num(b, "ttft_mean_ms")) + " ms, K/V chunks " +
         Fmt("%.0f", t.num(a, "kv_chunks_per_request")) + " -> " + Fmt("%.0f", t.num(b, "kv_chunks_per_request")) +
         ", acc " + Fmt("%.3f", t.num(a, "acc")) + " -> " + Fmt("%.3f", t.num(b, "acc"));
}

std::string Fig23Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  std::vector<std::string> chunks;
  for (const Row& r : f.rows) chunks.push_back(t.str(r, "chunk_tokens"));
  return "impress " + Range(t.all("speedup"), "%.2f", "x") + " faster at chunk " + Join(chunks, ",");
}

std::string Fig24Headline(const Figure& f) {
  const Table t(f);
  if (f.rows.empty()) return "";
  return "impress " + Range(t.all("speedup"), "%.2f", "x") + " faster at pools of " +
         Range(t.all("pool_mb"), "%.0f", " MB");
}

std::string Fig25Headline(const Figure& f) {
  const Table t(f);
  std::vector<std::string> parts;
  for (const Row& r : f.rows)
    if (t.str(r, "system") == "impress")
      parts.push_back(t.str(r, "model") + ": impress " + Fmt("%.2f", t.num(r, "h2o_lfu_over_system")) + "x");
  return Join(parts, "; ");
}

}  // namespace impress
