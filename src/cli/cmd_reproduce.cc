// impress reproduce: the paper's figures from the command line. Each named
// figure writes OUT/NAME.json (configuration, machine, table, series),
// NAME.csv (the table) and NAME.md (claim, command, machine, table);
// scripts/tables/plot.py draws NAME.png from the JSON.
#include <sys/utsname.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/provenance.h"
#include "common/named.h"
#include "common/units.h"
#include "data/task.h"
#include "experiment/figures.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "select/probe_heads.h"
#include "select/selector.h"

namespace impress {
namespace {

struct ReproduceOptions {
  std::vector<std::string> names;
  std::vector<std::string> models;
  std::string out = "results/figures", store = "stores", data = "data";
  std::string tasks = JoinNames(BenchmarkTaskNames(), ",");
  FigureScale scale;
  TierFlags tiers = TierFlags::Of(scale.cache_bytes, scale.disk_bw, scale.h2d_bw);
  std::string remote_bw = BytesText(static_cast<int64_t>(scale.remote_bw));
  RuntimeFlags runtime;
};

template <typename T>
std::string JoinNum(const std::vector<T>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

nlohmann::ordered_json ScaleJson(const FigureScale& s) {
  nlohmann::ordered_json j = {{"tasks", s.tasks}, {"task", s.task}, {"prefixes", s.pool}, {"prefix_tokens", s.prefix_tokens},
          {"requests", s.requests}, {"warmup", s.warmup}};
  AddCacheBytes(s.cache_bytes, &j);
  j.update(nlohmann::ordered_json{{"disk_bw", s.disk_bw}, {"h2d_bw", s.h2d_bw}, {"docs", s.docs}, {"shots", s.shots}, {"eval_prefix_tokens", s.eval_prefix_tokens},
          {"analysis_docs", s.analysis_docs}, {"retentions", s.retentions}, {"alphas", s.alphas},
          {"chunks", s.chunks}, {"pools", s.pools}, {"kv_dtype", s.kv_dtype},
          {"itf_unit", NameOf(ItfUnitNames(), s.select.unit)}, {"probe_layout", NameOf(ProbeLayoutNames(), s.select.probe_layout)},
          {"eval_chunk", s.eval_chunk}, {"retrieval_tokens", s.retrieval_tokens},
          {"retrieval_questions", s.retrieval_questions}, {"seed", s.seed}, {"remote", s.remote}, {"remote_bw", s.remote_bw}});
  AddImportanceJson(s.select.importance, &j);
  return j;
}

// The command that reruns this figure at this scale, every knob spelled out.
std::string RerunCommand(const ReproduceOptions& o, const std::string& name) {
  const FigureScale& s = o.scale;
  std::ostringstream c;
  c << "impress reproduce " << name;
  for (const auto& m : o.models) c << " --model " << m;
  c << " --out " << o.out << " --store " << o.store << " --tasks " << o.tasks << " --task " << s.task
    << " --prefixes " << s.pool << " --prefix-tokens " << s.prefix_tokens << " --requests " << s.requests
    << " --warmup " << s.warmup << o.tiers.CacheArgs() << " --disk-bw " << o.tiers.disk_bw << " --h2d-bw " << o.tiers.h2d_bw << " --docs " << s.docs
    << (s.eval_prefix_tokens > 0 ? " --eval-prefix-tokens " + std::to_string(s.eval_prefix_tokens)
                                 : " --shots " + std::to_string(s.shots))
    << " --analysis-docs " << s.analysis_docs << " --retention " << JoinNum(s.retentions) << " --alpha "
    << JoinNum(s.alphas) << " --chunk " << JoinNum(s.chunks) << " --pool " << JoinNum(s.pools) << " --itf-unit "
    << NameOf(ItfUnitNames(), s.select.unit) << " --probe-layout " << NameOf(ProbeLayoutNames(), s.select.probe_layout)
    << " --eval-chunk " << s.eval_chunk
    << " --retrieval-tokens " << s.retrieval_tokens << " --retrieval-questions " << s.retrieval_questions
    << " --seed " << s.seed;
  if (!s.select.importance.exact())
    c << " --importance-window " << s.select.importance.window << " --importance-pool " << s.select.importance.pool;
  if (!s.remote.empty()) c << " --remote " << s.remote << " --remote-bw " << o.remote_bw;
  return c.str();
}

std::string Cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) {
    char buf[32];
    const double d = v.get<double>();
    std::snprintf(buf, sizeof buf, std::fabs(d) >= 100 ? "%.1f" : "%.3f", d);
    return buf;
  }
  return v.dump();
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + "\"";
}

std::string Csv(const Figure& f) {
  std::string out;
  for (size_t i = 0; i < f.columns.size(); ++i) {
    if (i) out += ',';
    out += CsvField(f.columns[i].label);
  }
  out += '\n';
  for (const auto& row : f.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += CsvField(row[i].is_string() ? row[i].get<std::string>() : row[i].dump());
    }
    out += '\n';
  }
  return out;
}

std::string Markdown(const Figure& f, const std::string& command, const nlohmann::ordered_json& machine, double secs) {
  std::ostringstream md;
  md << "# " << f.name << ": " << f.title << "\n\nPaper: " << f.paper << ".\n\n```\n" << command << "\n```\n\n";
  md << "Built from commit " << BuildVersion() << ".\n\n";
  md << "Machine: " << machine["cpu"].get<std::string>() << ", " << machine["cores"] << " cores, "
     << machine["memory"].get<std::string>() << ", " << machine["device"].get<std::string>() << "; "
     << machine["date"].get<std::string>() << "; "
     << (secs >= 1 ? std::to_string(static_cast<int>(secs)) + " s"
                   : std::string("its experiments ran for an earlier figure of the same invocation"))
     << ".\n\n";
  md << "|";
  for (const auto& c : f.columns) md << " " << c.label << " |";
  md << "\n|";
  for (size_t i = 0; i < f.columns.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& row : f.rows) {
    md << "|";
    for (const auto& v : row) md << " " << Cell(v) << " |";
    md << "\n";
  }
  if (!f.notes.empty()) {
    md << "\n";
    for (const auto& n : f.notes) md << "- " << n.get<std::string>() << "\n";
  }
  return md.str();
}

// The names asked for, `all` expanded in the registry's order; an unknown one is an error.
StatusOr<std::vector<std::string>> FigureNames(const std::vector<std::string>& asked) {
  const std::vector<std::string>& known = FigureRunner::Names();
  std::vector<std::string> names;
  for (const auto& n : asked) {
    if (n == "all") names.insert(names.end(), known.begin(), known.end());
    else names.push_back(n);
  }
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end())
      return Status::InvalidArgument("unknown figure '" + n + "' (" + JoinNames(known) + ", all)");
  return names;
}

// The scale's tasks, caches and bandwidth caps from their flags.
Status ParseScale(ReproduceOptions* o) {
  FigureScale& s = o->scale;
  s.tasks = SplitList(o->tasks);
  RETURN_IF_ERROR(o->tiers.Parse(&s.cache_bytes, &s.disk_bw, &s.h2d_bw));
  auto remote_bw = ParseBytes(o->remote_bw);
  if (!remote_bw.ok()) return remote_bw.status().WithContext("--remote-bw");
  s.remote_bw = static_cast<double>(*remote_bw);
  return Status::OK();
}

// NAME.json (with `provenance`), NAME.csv and NAME.md under --out; the markdown also on stdout.
Status WriteFigure(const ReproduceOptions& o, const std::string& name, const Figure& fig,
                   nlohmann::ordered_json* provenance, bool cuda, double secs) {
  const std::string command = RerunCommand(o, name);
  (*provenance)["machine"] = Machine(cuda);  // its date is this figure's
  const nlohmann::ordered_json& machine = (*provenance)["machine"];
  nlohmann::ordered_json j = {{"provenance", *provenance}, {"name", fig.name}, {"title", fig.title}, {"paper", fig.paper},
                              {"headline", fig.headline}, {"command", command}, {"scale", ScaleJson(o.scale)}, {"machine", machine},
                              {"seconds", secs},
                              {"models", o.models}, {"columns", fig.labels()}, {"column_ids", fig.ids()}, {"rows", fig.rows},
                              {"series", fig.series}, {"notes", fig.notes}};
  const std::string base = o.out + "/" + name;
  for (const auto& [path, text] : {std::pair<std::string, std::string>{base + ".json", j.dump(2) + "\n"},
                                   {base + ".csv", Csv(fig)},
                                   {base + ".md", Markdown(fig, command, machine, secs)}})
    RETURN_IF_ERROR(WriteTextFile(path, text));
  std::cout << Markdown(fig, command, machine, secs) << "\n";
  std::cout.flush();
  return Status::OK();
}

int RunReproduce(ReproduceOptions o) {
  if (o.names.empty()) return Fail(Status::InvalidArgument("name a figure, or all (`impress list figures` prints them)"));
  if (o.models.empty()) return Fail(Status::InvalidArgument("--model is required"));
  ApplyRuntimeFlags(o.runtime);
  auto names = FigureNames(o.names);
  if (!names.ok()) return Fail(names.status());
  Status parsed = ParseScale(&o);
  if (!parsed.ok()) return Fail(parsed);
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::unique_ptr<Tokenizer>> toks;
  std::vector<FigureModel> figure_models;
  for (const std::string& dir : o.models) {
    auto tok = Tokenizer::FromFile(dir + "/tokenizer.json");
    if (!tok.ok()) return Fail(tok.status());
    auto model = LoadModel(dir, LoadOptions{o.runtime.device, o.runtime.dtype});
    if (!model.ok()) return Fail(model.status());
    toks.push_back(std::move(*tok));
    models.push_back(std::move(*model));
    figure_models.push_back({dir, models.back().get(), toks.back().get()});
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return Fail(Status::IOError(o.out + ": cannot create: " + ec.message()));
  FigureRunner runner(figure_models, o.scale, o.data, o.store);
  // Once: the model's digest reads every weight file.
  const bool cuda = models[0]->device().is_cuda();
  nlohmann::ordered_json provenance = Provenance(o.models[0], cuda);
  for (const std::string& name : *names) {
    const auto start = std::chrono::steady_clock::now();
    auto fig = runner.Make(name);
    if (!fig.ok()) return Fail(fig.status().WithContext(name));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Status w = WriteFigure(o, name, *fig, &provenance, cuda, secs);
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

}  // namespace

void AddReproduceCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<ReproduceOptions>();
  FigureScale* s = &o->scale;
  CLI::App* cmd = app.add_subcommand("reproduce", "The paper's figures: NAME.json, .csv and .md per figure under --out");
  cmd->option_defaults()->always_capture_default();  // --help shows each default
  cmd->add_option("names", o->names, "figures: " + JoinNames(FigureRunner::Names()) + ", or all");
  cmd->add_option("--model", o->models, "Hugging Face model directory (required); repeat for fig25 (the others use the first)");
  cmd->add_option("--out", o->out, "folder for the figures' files");
  cmd->add_option("--store", o->store, "folder for the chunk stores (one per model and chunk size)");
  cmd->add_option("--data", o->data, "folder with <task>/<split>.jsonl (make data)");
  cmd->add_option("--tasks", o->tasks, "tasks of the multi-task figures (comma-separated)");
  cmd->add_option("--task", s->task, "task of the single-task figures (fig22-25, motivation)");
  cmd->add_option("--prefixes", s->pool, "prefixes in the pool")->check(PositiveNumber());
  cmd->add_option("--prefix-tokens", s->prefix_tokens, "tokens per prefix")->check(PositiveNumber());
  cmd->add_option("--requests", s->requests, "measured requests per system")->check(PositiveNumber());
  cmd->add_option("--warmup", s->warmup, "warm-up requests per system")->check(NonNegativeNumber());
  o->tiers.Add(cmd);
  cmd->add_option("--docs", s->docs, "documents per task for accuracy (0: all)")->check(NonNegativeNumber());
  CLI::Option* shots = cmd->add_option("--shots", s->shots, "few-shot examples for accuracy")->check(NonNegativeNumber());
  cmd->add_option("--eval-prefix-tokens", s->eval_prefix_tokens,
                  "instead of --shots: per task, as many few-shot examples as fit in this many tokens (0: off)")
      ->check(NonNegativeNumber())
      ->excludes(shots);
  cmd->add_option("--analysis-docs", s->analysis_docs, "documents for the motivation figures")->check(PositiveNumber());
  cmd->add_option("--retention", s->retentions, "fig15's and spi's retentions")->delimiter(',')->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--retrieval-tokens", s->retrieval_tokens, "spi: tokens per retrieval haystack")->check(PositiveNumber());
  cmd->add_option("--retrieval-questions", s->retrieval_questions, "spi: retrieval questions")->check(PositiveNumber());
  cmd->add_option("--alpha", s->alphas, "fig22's alphas")->delimiter(',')->check(NonNegativeNumber());
  cmd->add_option("--chunk", s->chunks, "fig23's chunk sizes")->delimiter(',')->check(PositiveNumber());
  cmd->add_option("--pool", s->pools, "fig24's pool sizes (prefixes)")->delimiter(',')->check(PositiveNumber());
  AddSelectionFlags(cmd, &s->select, nullptr);
  cmd->add_option("--eval-chunk", s->eval_chunk, "tokens per chunk the chunk unit cuts the accuracy evals' prefixes into")
      ->check(PositiveNumber());
  cmd->add_option("--seed", s->seed, "seed of prefixes, streams and few-shot samples");
  cmd->add_option("--remote", s->remote,
                  "redis://HOST:PORT[,...]: the codec figure also reads from this cluster, local tiers empty");
  cmd->add_option("--remote-bw", o->remote_bw, "the codec figure's cap on cluster reads, bytes/s");
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunReproduce(*o); }});
}

}  // namespace impress
