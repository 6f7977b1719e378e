// Subcommands of the `impress` executable. Each Add*Command registers its
// options on `app` and appends the function that runs it; main() runs the one
// that was named. Run functions return the process exit code and are the only
// place that turns a Status into one.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cache/tier.h"
#include "common/status.h"

namespace impress {

struct SelectorOptions;

using Command = std::pair<CLI::App*, std::function<int()>>;

// Number checks for options, with a short message ("--chunk: must be a
// positive number, not '0'"); CLI11's own name the range's double bounds.
CLI::Validator PositiveNumber();
CLI::Validator NonNegativeNumber();

void AddInfoCommand(CLI::App& app, std::vector<Command>* commands);
void AddTokenizeCommand(CLI::App& app, std::vector<Command>* commands);
void AddGenerateCommand(CLI::App& app, std::vector<Command>* commands);
void AddEvalCommand(CLI::App& app, std::vector<Command>* commands);
void AddRunCommand(CLI::App& app, std::vector<Command>* commands);
void AddStoreCommand(CLI::App& app, std::vector<Command>* commands);
void AddRegressCommand(CLI::App& app, std::vector<Command>* commands);
void AddReproduceCommand(CLI::App& app, std::vector<Command>* commands);
void AddListCommand(CLI::App& app, std::vector<Command>* commands);

// Prints "impress: error: <message>" on stderr and returns the exit code 1.
int Fail(const Status& status);

// "a,b,c" -> {"a", "b", "c"} (a --system or --tasks list).
std::vector<std::string> SplitList(const std::string& s);

// Writes `text` to `path` (a --json option); an error names the file.
Status WriteTextFile(const std::string& path, const std::string& text);

// Prints an object as JSON with its "provenance" first (as_json), or as
// "key  value" lines.
void PrintRecord(const nlohmann::ordered_json& record, bool as_json);

struct SweepAxes;
// Every selection knob, parsed into `select`: --probe-layout,
// --importance-window and --importance-pool, and
// - with `axes` (run, eval): --itf-unit, --retention and --alpha as
//   comma-separated lists into `axes` (the command runs every combination),
//   and the digest system's options;
// - without (reproduce, whose figures choose retention and alpha): one --itf-unit.
void AddSelectionFlags(CLI::App* cmd, SelectorOptions* select, SweepAxes* axes);

// --<tier>-cache for each cache tier (--gpu-cache, --cpu-cache), --disk-bw
// and --h2d-bw: byte sizes with K/M/G suffixes, parsed after the command
// line is.
struct TierFlags {
  std::array<std::string, kMaxTiers> cache;  // by tier: the cache tiers' defaults, fastest first
  std::string disk_bw = "0", h2d_bw = "0";
  // The flags with a config's own numbers as their defaults (BytesText).
  static TierFlags Of(const TierCounts& cache_bytes, double disk_bw, double h2d_bw);
  void Add(CLI::App* cmd);
  // Each cache tier's bytes into `cache`. The error names the flag.
  Status Parse(TierCounts* cache, double* disk_bytes_per_second, double* h2d_bytes_per_second) const;
  // " --gpu-cache X --cpu-cache Y": the cache flags as given, for a command that reruns this one.
  std::string CacheArgs() const;
};

// Options every command that runs a model shares.
struct RuntimeFlags {
  std::string device = "auto";
  std::string dtype = "auto";
  int threads = 0;  // 0: LibTorch's default
};
void AddRuntimeFlags(CLI::App* cmd, RuntimeFlags* flags);
// Applies the thread count; call before running a model.
void ApplyRuntimeFlags(const RuntimeFlags& flags);

}  // namespace impress
