// impress: multi-tier prefix-KV storage for LLM inference (IMPRESS, FAST '25).
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/provenance.h"
#include "common/runtime.h"
#include "common/units.h"

namespace impress {

int Fail(const Status& status) {
  std::cerr << "impress: error: " << status.message() << "\n";
  return 1;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!(out << text)) return Status::IOError(path + ": cannot write");
  return Status::OK();
}

void PrintRecord(const nlohmann::ordered_json& record, bool as_json) {
  if (as_json) {
    std::cout << WithProvenance(record, "", false).dump(2) << "\n";
    return;
  }
  for (auto it = record.begin(); it != record.end(); ++it) {
    std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    std::printf("%-20s %s\n", it.key().c_str(), v.c_str());
  }
}

namespace {

std::string CacheFlag(Tier t) { return std::string("--") + TierName(t) + "-cache"; }

}  // namespace

TierFlags TierFlags::Of(const TierCounts& cache_bytes, double disk_bw, double h2d_bw) {
  TierFlags f;
  for (Tier t : kTiers)
    if (IsCacheTier(t)) f.cache[static_cast<int>(t)] = BytesText(cache_bytes[t]);
  f.disk_bw = BytesText(static_cast<int64_t>(disk_bw));
  f.h2d_bw = BytesText(static_cast<int64_t>(h2d_bw));
  return f;
}

void TierFlags::Add(CLI::App* cmd) {
  for (Tier t : kTiers) {
    if (!IsCacheTier(t)) continue;
    std::string what = TierName(t);
    for (char& ch : what) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    cmd->add_option(CacheFlag(t), cache[static_cast<int>(t)], what + " cache bytes (K/M/G)");
  }
  cmd->add_option("--disk-bw", disk_bw, "cap disk reads at this many bytes/s (0: none, the real disk)");
  cmd->add_option("--h2d-bw", h2d_bw, "cap host-to-device copies at this many bytes/s (0: none)");
}

Status TierFlags::Parse(TierCounts* bytes, double* disk, double* h2d) const {
  auto parse = [](const std::string& flag, const std::string& text, int64_t* out) {
    auto b = ParseBytes(text.empty() ? "0" : text);  // a cache tier the command gives no size: none
    if (!b.ok()) return b.status().WithContext(flag);
    *out = *b;
    return Status::OK();
  };
  for (Tier t : kTiers)
    if (IsCacheTier(t)) RETURN_IF_ERROR(parse(CacheFlag(t), cache[static_cast<int>(t)], &(*bytes)[t]));
  int64_t d = 0, h = 0;
  RETURN_IF_ERROR(parse("--disk-bw", disk_bw, &d));
  RETURN_IF_ERROR(parse("--h2d-bw", h2d_bw, &h));
  *disk = static_cast<double>(d);
  *h2d = static_cast<double>(h);
  return Status::OK();
}

std::string TierFlags::CacheArgs() const {
  std::string args;
  for (Tier t : kTiers)
    if (IsCacheTier(t)) args += " " + CacheFlag(t) + " " + (cache[static_cast<int>(t)].empty() ? "0" : cache[static_cast<int>(t)]);
  return args;
}

namespace {
CLI::Validator NumberCheck(const char* name, bool (*ok)(double), const char* what) {
  return CLI::Validator(
      [ok, what](std::string& in) {
        char* end = nullptr;
        const double v = std::strtod(in.c_str(), &end);
        if (in.empty() || *end != '\0' || !ok(v)) return "must be " + std::string(what) + ", not '" + in + "'";
        return std::string();
      },
      name);
}
}  // namespace

CLI::Validator PositiveNumber() {
  return NumberCheck("POSITIVE", [](double v) { return v > 0; }, "a positive number");
}
CLI::Validator NonNegativeNumber() {
  return NumberCheck("NONNEGATIVE", [](double v) { return v >= 0; }, "a number of at least 0");
}

void AddRuntimeFlags(CLI::App* cmd, RuntimeFlags* flags) {
  cmd->add_option("--device", flags->device, "cpu, cuda, or auto (cuda when a GPU is visible)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--dtype", flags->dtype, "compute dtype: float32, float16, bfloat16, or auto (fp32 on CPU, fp16 on CUDA)")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16", "auto"}));
  cmd->add_option("--threads", flags->threads, "CPU threads for LibTorch (0: its default)")->check(NonNegativeNumber());
}

void ApplyRuntimeFlags(const RuntimeFlags& flags) {
  if (flags.threads > 0) at::set_num_threads(flags.threads);
}

}  // namespace impress

int main(int argc, char** argv) {
  impress::TuneHostAllocator();
  // A write past a file-size limit (ulimit -f) fails like one on a full disk,
  // with an error that names the file, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  impress::RecordCommandLine(argc, argv);
  CLI::App app{"impress: importance-informed multi-tier prefix KV storage for LLM inference"};
  app.require_subcommand(1);
  app.set_version_flag("--version", impress::BuildVersion(), "print the commit this binary was built from and exit");
  std::vector<impress::Command> commands;
  impress::AddInfoCommand(app, &commands);
  impress::AddTokenizeCommand(app, &commands);
  impress::AddGenerateCommand(app, &commands);
  impress::AddEvalCommand(app, &commands);
  impress::AddRunCommand(app, &commands);
  impress::AddStoreCommand(app, &commands);
  impress::AddRegressCommand(app, &commands);
  impress::AddReproduceCommand(app, &commands);
  impress::AddListCommand(app, &commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as every other bad input gets.
    return impress::Fail(impress::Status::InvalidArgument(std::string(e.what()) + " (--help lists the options)"));
  }
  try {
    for (auto& [cmd, run] : commands)
      if (cmd->parsed()) return run();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    return impress::Fail(impress::Status::Internal("LibTorch: " + msg.substr(0, msg.find('\n'))));
  } catch (const std::exception& e) {
    return impress::Fail(impress::Status::InvalidArgument(e.what()));
  }
  return 1;
}
