// How a result was made, for every JSON the tool writes: the build's commit,
// the command line, the model, LibTorch and the machine.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace impress {

// The commit the binary was built from (cmake/build_commit.cmake; "unknown"
// outside a git checkout) and whether tracked files differed from it.
const char* BuildCommit();
bool BuildDirty();
// "COMMIT" or "COMMIT-dirty".
std::string BuildVersion();

// The process's command line, recorded once at startup (main).
void RecordCommandLine(int argc, char** argv);
const std::string& CommandLine();

// The machine: CPU model, cores, memory, OS, device ("cuda" or the CPU), date (UTC).
nlohmann::ordered_json Machine(bool cuda);

// A digest of the model directory's weights and config: CRC-32C over
// config.json and every *.safetensors file in name order, "crc32c:xxxxxxxx"
// ("" when none can be read).
std::string ModelDigest(const std::string& model_dir);

// {"commit", "dirty", "command", "model": {"dir", "digest"}, "libtorch",
//  "machine"}; `model_dir` empty: no "model".
nlohmann::ordered_json Provenance(const std::string& model_dir, bool cuda);
// `result` (an object) with Provenance(model_dir, cuda) as its first key, "provenance".
nlohmann::ordered_json WithProvenance(const nlohmann::ordered_json& result, const std::string& model_dir, bool cuda);

}  // namespace impress
