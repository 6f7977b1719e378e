// Shared helpers for tests: where fixtures live, temporary directories.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace impress::testing {

// The directory `make fixtures` filled (IMPRESS_FIXTURES overrides).
inline std::string FixturesDir() {
  const char* d = std::getenv("IMPRESS_FIXTURES");
  return d ? d : IMPRESS_DEFAULT_FIXTURES;
}

// The folder `make data` filled (IMPRESS_DATA overrides).
inline std::string DataDir() {
  const char* d = std::getenv("IMPRESS_DATA");
  return d ? d : IMPRESS_DEFAULT_DATA;
}

// A fixture that `make fixtures` (or `make model`) did not make fails the
// test; IMPRESS_ALLOW_MISSING_FIXTURES=1 makes it a skip, for a partial set
// made by hand. Never a silent pass.
inline bool AllowMissingFixtures() {
  const char* e = std::getenv("IMPRESS_ALLOW_MISSING_FIXTURES");
  return e != nullptr && std::string(e) == "1";
}
#define IMPRESS_MISSING_FIXTURE(what)                                                                        \
  do {                                                                                                       \
    if (::impress::testing::AllowMissingFixtures()) GTEST_SKIP() << what << " not made here";                \
    FAIL() << what << " missing (" << ::impress::testing::FixturesDir()                                      \
           << "): run 'make fixtures' and 'make model', or set IMPRESS_ALLOW_MISSING_FIXTURES=1 to skip"; \
  } while (0)

// fixtures.json: {"models": {name: dir}, "tokenizers": {name: dir}}.
inline nlohmann::json FixtureManifest() {
  std::ifstream in(FixturesDir() + "/fixtures.json");
  if (!in) {
    if (!AllowMissingFixtures()) ADD_FAILURE() << FixturesDir() << "/fixtures.json missing: run 'make fixtures'";
    return nlohmann::json{{"models", nlohmann::json::object()}, {"tokenizers", nlohmann::json::object()}};
  }
  return nlohmann::json::parse(in);
}

// IMPRESS_TEST_DEVICE=cuda runs model comparisons on a GPU (still fp32).
inline std::string TestDevice() {
  const char* d = std::getenv("IMPRESS_TEST_DEVICE");
  return d ? d : "cpu";
}

// A fresh directory removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec || !std::filesystem::is_directory(base)) base = std::filesystem::current_path();
    std::string tmpl = (base / "impress_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::fprintf(stderr, "TempDir: cannot create %s\n", tmpl.c_str());
      std::abort();
    }
    path_ = tmpl;
  }
  // Never throws (a destructor may run while a failed test unwinds); a folder
  // it cannot remove is named on stderr.
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec) std::fprintf(stderr, "TempDir: cannot remove %s: %s\n", path_.c_str(), ec.message().c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(File(name), std::ios::binary) << bytes;
  }

 private:
  std::string path_;
};

}  // namespace impress::testing
