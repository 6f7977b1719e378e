// Shared by the fuzz targets: the parsers under test read files, so each
// input is written to a file in a directory private to the process first.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace impress::fuzz {

// A directory private to this process, created on first use and removed at exit.
inline const std::string& ScratchDir() {
  // Never destroyed: the exit handler still needs it after static destructors.
  static const std::string* dir = [] {
    const char* base = std::getenv("TMPDIR");
    auto* d = new std::string(std::string(base && *base ? base : "/tmp") + "/impress-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `size` bytes to `path` (replacing it) and returns the path.
inline std::string WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace impress::fuzz
