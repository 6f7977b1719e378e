#include "cli/provenance.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/crc32c.h"

namespace impress {
namespace {

std::string& RecordedCommandLine() {
  static std::string line;
  return line;
}

std::string ReadFirstLine(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      std::string v = line.substr(line.find(':') + 1);
      const size_t at = v.find_first_not_of(" \t");
      return at == std::string::npos ? "" : v.substr(at);
    }
  return "?";
}

// CRC-32C of a whole file into `crc`; false when it cannot be read.
bool CrcFile(const std::string& path, uint32_t* crc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<char> buf(4 << 20);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) ok = false;
    if (n <= 0) break;
    *crc = Crc32c(buf.data(), static_cast<size_t>(n), *crc);
  }
  ::close(fd);
  return ok;
}

}  // namespace

std::string BuildVersion() { return std::string(BuildCommit()) + (BuildDirty() ? "-dirty" : ""); }

void RecordCommandLine(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string a = i == 0 ? std::filesystem::path(argv[0]).filename().string() : argv[i];
    if (a.empty() || a.find_first_of(" \t\"'$\\") != std::string::npos) a = "'" + a + "'";
    line += (i ? " " : "") + a;
  }
  RecordedCommandLine() = line;
}

const std::string& CommandLine() { return RecordedCommandLine(); }

nlohmann::ordered_json Machine(bool cuda) {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.0f GiB RAM", std::atof(ReadFirstLine("/proc/meminfo", "MemTotal").c_str()) / (1 << 20));
  struct utsname u;
  uname(&u);
  return {{"cpu", ReadFirstLine("/proc/cpuinfo", "model name")},
          {"cores", std::thread::hardware_concurrency()},
          {"memory", mem},
          {"os", std::string(u.sysname) + " " + u.release},
          {"device", cuda ? "cuda" : "cpu (GPU tier emulated in host memory)"},
          {"date", date}};
}

std::string ModelDigest(const std::string& model_dir) {
  std::vector<std::string> files = {model_dir + "/config.json"};
  std::error_code ec;
  std::vector<std::string> weights;
  for (const auto& e : std::filesystem::directory_iterator(model_dir, ec))
    if (e.path().extension() == ".safetensors") weights.push_back(e.path().string());
  std::sort(weights.begin(), weights.end());
  files.insert(files.end(), weights.begin(), weights.end());
  uint32_t crc = 0;
  for (const std::string& f : files)
    if (!CrcFile(f, &crc)) return "";
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  return std::string("crc32c:") + hex;
}

nlohmann::ordered_json Provenance(const std::string& model_dir, bool cuda) {
  nlohmann::ordered_json p = {{"commit", BuildCommit()}, {"dirty", BuildDirty()}, {"command", CommandLine()}};
  if (!model_dir.empty()) p["model"] = {{"dir", model_dir}, {"digest", ModelDigest(model_dir)}};
  p["libtorch"] = TORCH_VERSION;
  p["machine"] = Machine(cuda);
  return p;
}

nlohmann::ordered_json WithProvenance(const nlohmann::ordered_json& result, const std::string& model_dir, bool cuda) {
  nlohmann::ordered_json out = {{"provenance", Provenance(model_dir, cuda)}};
  for (auto it = result.begin(); it != result.end(); ++it)
    if (it.key() != "provenance") out[it.key()] = it.value();
  return out;
}

}  // namespace impress
