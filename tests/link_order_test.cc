// Where the C++ runtime's std::filesystem functions resolve in a binary that
// links LibTorch: in libstdc++, not in a copy another library exports
// (CMakeLists.txt makes libstdc++ the first library a binary needs).
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace impress {
namespace {

std::string LibraryOf(void* fn) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

TEST(LinkOrder, FilesystemFunctionsResolveInLibstdcxx) {
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  using CreateDirs = bool (*)(const std::filesystem::path&, std::error_code&);
  const std::string remove_all = LibraryOf(reinterpret_cast<void*>(static_cast<RemoveAll>(&std::filesystem::remove_all)));
  const std::string create = LibraryOf(reinterpret_cast<void*>(static_cast<CreateDirs>(&std::filesystem::create_directories)));
  EXPECT_NE(remove_all.find("libstdc++"), std::string::npos) << "std::filesystem::remove_all resolves in " << remove_all;
  EXPECT_NE(create.find("libstdc++"), std::string::npos) << "std::filesystem::create_directories resolves in " << create;
}

TEST(LinkOrder, RemoveAllRemovesANestedTree) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / ("impress_link_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "a" / "b");
  { std::FILE* f = std::fopen((root / "a" / "b" / "f").c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  std::error_code ec;
  EXPECT_EQ(std::filesystem::remove_all(root, ec), 4u) << ec.message();
  EXPECT_FALSE(std::filesystem::exists(root));
}

}  // namespace
}  // namespace impress
