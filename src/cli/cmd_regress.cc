// impress regress: the CI accuracy regression. Checks a small fixed
// evaluation against the numbers committed in --expected; --update rewrites
// that file from this run on purpose.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/provenance.h"
#include "codec/kv_codec.h"
#include "experiment/regression.h"
#include "model/model.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct RegressOptions {
  std::string model, expected, data = "data";
  std::string kv_codec;  // set: in place of the expected file's config.kv_codec
  std::vector<std::string> tasks, systems, substitute;  // RegressionSelection; substitute as A=B
  bool update = false;
  RuntimeFlags runtime;
};

StatusOr<nlohmann::ordered_json> ReadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot read");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": not JSON: " + e.what());
  }
}

int RunRegress(const RegressOptions& o) {
  // MKL picks its GEMM kernels by CPU (AVX-512 on Intel, AVX2 on AMD by
  // default), and they round differently: pinned to its AVX2 path, which
  // every x86-64 CPU with AVX2 runs, the regression's numbers are the same
  // on either (set before MKL's first call; an MKL_CBWR already set wins).
  setenv("MKL_CBWR", "AVX2", /*overwrite=*/0);
  ApplyRuntimeFlags(o.runtime);
  RegressionSelection selection;
  selection.tasks = o.tasks;
  selection.systems = o.systems;
  for (const std::string& s : o.substitute) {
    const size_t eq = s.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == s.size())
      return Fail(Status::InvalidArgument("--substitute " + s + ": not SPEC_SYSTEM=SYSTEM"));
    selection.substitute[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (o.update && !selection.everything())
    return Fail(Status::InvalidArgument("--update rewrites every row: it takes no --task, --system or --substitute"));
  nlohmann::ordered_json spec;
  if (o.update && !std::filesystem::exists(o.expected)) {
    spec = DefaultRegressionSpec();
  } else {
    auto s = ReadSpec(o.expected);
    if (!s.ok()) return Fail(s.status());
    spec = std::move(*s);
  }
  Status shape = ValidateRegressionSpec(spec, o.update);
  if (!shape.ok()) return Fail(shape.WithContext(o.expected));
  if (!o.kv_codec.empty()) spec["config"]["kv_codec"] = o.kv_codec;
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto model = LoadModel(o.model, LoadOptions{o.runtime.device, o.runtime.dtype});
  if (!model.ok()) return Fail(model.status());
  auto rows = RunRegression(**model, **tok, spec, o.data, selection);
  if (!rows.ok()) return Fail(rows.status().WithContext(o.expected));
  std::printf("| task | system | n | acc | acc_norm | gold loglik mean |\n|---|---|---|---|---|---|\n");
  for (const auto& r : *rows)
    std::printf("| %s | %s | %d | %.4f | %.4f | %.5f |\n", r["task"].get<std::string>().c_str(),
                r["system"].get<std::string>().c_str(), r["n"].get<int>(), r["acc"].get<double>(),
                r["acc_norm"].get<double>(), r["gold_loglik_mean"].get<double>());
  if (o.update) {
    spec["command"] = "impress regress --model " + o.model + " --expected " + o.expected + " --update";
    spec["results"] = *rows;
    Status w = WriteTextFile(o.expected, WithProvenance(spec, o.model, (*model)->device().is_cuda()).dump(2) + "\n");
    if (!w.ok()) return Fail(w);
    std::printf("wrote %s\n", o.expected.c_str());
    return 0;
  }
  Status cmp = CompareRegression(spec, *rows, /*require_all=*/selection.everything());
  if (!cmp.ok()) return Fail(cmp.WithContext(o.expected));
  std::printf("every number within tolerance of %s\n", o.expected.c_str());
  return 0;
}

}  // namespace

void AddRegressCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<RegressOptions>();
  CLI::App* cmd = app.add_subcommand("regress", "Accuracy regression: a fixed small evaluation against committed numbers");
  cmd->option_defaults()->always_capture_default();  // --help shows each default
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  cmd->add_option("--expected", o->expected, "expected numbers (JSON): its config says what runs")->required();
  cmd->add_option("--data", o->data, "folder with <task>/<split>.jsonl (make data)");
  cmd->add_flag("--update", o->update, "rewrite --expected from this run (keeps its config and tolerances)");
  cmd->add_option("--task", o->tasks, "check only these tasks' rows (repeat or comma-separate)")->delimiter(',');
  cmd->add_option("--system", o->systems, "check only these systems' rows (repeat or comma-separate)")->delimiter(',');
  cmd->add_option("--substitute", o->substitute,
                  "A=B: score system B where the expected file says A, against A's numbers (shows whether the "
                  "regression tells B from A; a broken selection must fail)")
      ->delimiter(',');
  cmd->add_option("--kv-codec", o->kv_codec,
                  "score with the prefix KV a store with this codec serves, in place of the "
                  "expected file's config.kv_codec (fp16 when it has none)")
      ->check(CLI::IsMember(KvCodecNames()));
  AddRuntimeFlags(cmd, &o->runtime);
  commands->push_back({cmd, [o] { return RunRegress(*o); }});
}

}  // namespace impress
