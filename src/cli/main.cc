// impress: multi-tier prefix-KV storage for LLM inference (IMPRESS, FAST '25).
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

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

void TierFlags::Add(CLI::App* cmd) {
  cmd->add_option("--gpu-cache", gpu_cache, "GPU cache bytes (K/M/G)");
  cmd->add_option("--cpu-cache", cpu_cache, "CPU cache bytes (K/M/G)");
  cmd->add_option("--disk-bw", disk_bw, "cap disk reads at this many bytes/s (0: none, the real disk)");
  cmd->add_option("--h2d-bw", h2d_bw, "cap host-to-device copies at this many bytes/s (0: none)");
}

Status TierFlags::Parse(int64_t* gpu, int64_t* cpu, double* disk, double* h2d) const {
  const std::pair<const char*, const std::string*> flags[4] = {
      {"--gpu-cache", &gpu_cache}, {"--cpu-cache", &cpu_cache}, {"--disk-bw", &disk_bw}, {"--h2d-bw", &h2d_bw}};
  int64_t v[4];
  for (int i = 0; i < 4; ++i) {
    auto b = ParseBytes(*flags[i].second);
    if (!b.ok()) return b.status().WithContext(flags[i].first);
    v[i] = *b;
  }
  *gpu = v[0];
  *cpu = v[1];
  *disk = static_cast<double>(v[2]);
  *h2d = static_cast<double>(v[3]);
  return Status::OK();
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
