// impress list: the registries' entries, one name per line (what scripts,
// the Makefile and CMake read instead of lists of their own), or with
// --json every entry's properties.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "codec/kv_codec.h"
#include "data/task.h"
#include "request/systems.h"
#include "select/method.h"
#include "experiment/figure_headline.h"
#include "experiment/figures.h"

namespace impress {
namespace {

using ojson = nlohmann::ordered_json;

struct ListOptions {
  std::string what;
  bool paper = false;  // systems: the paper's seven only
  bool json = false;
  std::string headlines;  // figures: each one's headline from DIR/NAME.json's rows, where it exists
};

ojson SystemsJson(bool paper_only) {
  ojson a = ojson::array();
  for (const System& s : Systems())
    if (s.paper || !paper_only)
      a.push_back({{"name", s.name}, {"paper", s.paper}, {"reuse", s.reuse},
                   {"selection", SelectorKindName(s.select.kind)}, {"policy", PolicyName(s.policy)},
                   {"reorder", s.reorder}, {"served_from_store", s.served_from_store},
                   {"depends_on_retention", s.depends_on_retention}, {"uses_probe_heads", s.uses_probe_heads}});
  return a;
}

ojson TasksJson() {
  ojson a = ojson::array();
  for (const TaskSpec& t : Tasks()) {
    // A split's name and its file relative to --data; null for a generated task.
    auto split = [](const char* s) { return s == nullptr ? ojson(nullptr) : ojson(s); };
    auto file = [&t](const char* s) { return s == nullptr ? ojson(nullptr) : ojson(SplitFile(t, s)); };
    a.push_back({{"name", t.name}, {"kind", t.choice() ? "multiple choice" : "generated"},
                 {"shots_from", split(t.train_split)}, {"scored_split", split(t.eval_split)},
                 {"acc_norm", t.reports_acc_norm}, {"shots_file", file(t.train_split)},
                 {"scored_file", file(t.eval_split)}});
  }
  return a;
}

ojson CodecsJson() {
  ojson a = ojson::array();
  for (const std::string& name : KvCodecNames()) {
    const KvCodec c = *ParseKvCodec(name);
    // Bytes per value of one 64-token, one-head part of dim 64, scales included.
    auto per_value = [c](KvRole role) { return static_cast<double>(EncodedBytes(c, role, 64, 1, 64)) / (64 * 64); };
    a.push_back({{"name", name}, {"key_bytes_per_value", per_value(KvRole::kKeys)},
                 {"value_bytes_per_value", per_value(KvRole::kValues)}});
  }
  return a;
}

StatusOr<ojson> FiguresJson(const std::string& headlines) {
  ojson a = ojson::array();
  for (const std::string& name : FigureRunner::Names()) {
    const FigureChart& c = FigureRunner::ChartOf(name);
    ojson e = {{"name", name},
               {"chart", {{"kind", c.kind}, {"columns", c.columns}, {"ylabel", c.ylabel}, {"logx", c.logx}}}};
    const std::string path = headlines + "/" + name + ".json";
    if (!headlines.empty() && std::filesystem::exists(path)) {
      std::ifstream in(path);
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_discarded()) return Status::InvalidArgument(path + ": not JSON");
      for (const char* key : {"name", "columns", "column_ids", "rows", "notes"})
        if (!j.contains(key))
          return Status::InvalidArgument(path + ": no '" + key + "' (not a figure as `impress reproduce` records it now)");
      e["headline"] = FigureRunner::HeadlineOf(name, FigureFromJson(j));
    }
    a.push_back(e);
  }
  return a;
}

int RunList(const ListOptions& o) {
  ojson entries;
  if (o.what == "figures") {
    StatusOr<ojson> figures = FiguresJson(o.headlines);
    if (!figures.ok()) return Fail(figures.status());
    entries = *figures;
  } else {
    entries = o.what == "systems" ? SystemsJson(o.paper) : o.what == "tasks" ? TasksJson() : CodecsJson();
  }
  if (o.json) {
    PrintRecord({{o.what, entries}}, true);
    return 0;
  }
  for (const auto& e : entries) std::printf("%s\n", e["name"].get<std::string>().c_str());
  return 0;
}

}  // namespace

void AddListCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<ListOptions>();
  CLI::App* cmd = app.add_subcommand("list", "The registered systems, figures, tasks or codecs, one name per line");
  cmd->add_option("what", o->what, "systems, figures, tasks or codecs")
      ->required()
      ->check(CLI::IsMember({"systems", "figures", "tasks", "codecs"}));
  cmd->add_flag("--paper", o->paper, "systems: the paper's seven only (without the controls random and static)");
  cmd->add_flag("--json", o->json, "every entry with its properties, as JSON");
  cmd->add_option("--headlines", o->headlines,
                  "figures, with --json: each one's headline, computed from DIR/NAME.json's rows where it exists");
  commands->push_back({cmd, [o] { return RunList(*o); }});
}

}  // namespace impress
