// The safetensors reader against hand-built files, valid and lying.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace impress {
namespace {

// Element i of float data that the format does not promise to align.
float FloatAt(const void* data, size_t i) {
  float f;
  std::memcpy(&f, static_cast<const char*>(data) + i * sizeof(float), sizeof(f));
  return f;
}

using testing::TempDir;

std::string Build(const std::string& header, const std::string& data) {
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string Floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// Opens `bytes` written as a file and returns the error (empty when OK).
std::string OpenError(const std::string& bytes) {
  TempDir dir;
  dir.Write("x.safetensors", bytes);
  auto f = SafetensorsFile::Open(dir.File("x.safetensors"));
  if (f.ok()) return "";
  EXPECT_NE(f.status().message().find(dir.File("x.safetensors")), std::string::npos) << f.status().message();
  return f.status().message();
}

TEST(Safetensors, ReadsValidFile) {
  TempDir dir;
  std::string header = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"F16","shape":[1],"data_offsets":[16,18]}})";
  dir.Write("m.safetensors", Build(header, Floats({1, 2, 3, 4}) + std::string("\x00\x3c", 2)));
  auto f = SafetensorsFile::Open(dir.File("m.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  const auto& t = (*f)->tensors();
  ASSERT_EQ(t.size(), 2u);
  const TensorView& a = t.at("a");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(FloatAt(a.data, 3), 4.0f);
  EXPECT_EQ(t.at("b").nbytes, 2u);
}

TEST(Safetensors, MissingFile) {
  auto f = SafetensorsFile::Open("/nonexistent/dir/model.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/dir/model.safetensors: cannot open"), std::string::npos);
}

TEST(Safetensors, RejectsLyingHeaders) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    std::string name, bytes, expect;
  } cases[] = {
      {"short", "abc", "truncated"},
      {"header past end", std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10), "runs past the end"},
      {"huge header", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), "implausibly large"},
      {"not json", Build("{nope", ""), "not valid JSON"},
      {"not object", Build("[1,2]", ""), "not a JSON object"},
      {"offsets past end", Build("{" + ok_entry + "}", Floats({1})), "past the end of the data"},
      {"begin after end", Build(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", Floats({1, 2})),
       "is after end"},
      {"size mismatch", Build(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", Floats({1, 2})),
       "shape and dtype need 12"},
      {"overlap", Build("{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", Floats({1, 2, 3})),
       "overlapping"},
      {"unknown dtype", Build(R"({"a":{"dtype":"F8_E9","shape":[1],"data_offsets":[0,1]}})", "x"), "unknown dtype"},
      {"negative dim", Build(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", Floats({1})),
       "negative"},
      {"missing fields", Build(R"({"a":{"dtype":"F32"}})", ""), "needs dtype, shape and data_offsets"},
      {"overflowing shape", Build(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", Floats({1})),
       "overflows"},
  };
  for (const auto& c : cases) {
    std::string err = OpenError(c.bytes);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": got '" << err << "'";
    EXPECT_EQ(err.find('\n'), std::string::npos) << c.name << ": message is not one line";
  }
}

TEST(TensorSet, ShardedIndex) {
  TempDir dir;
  dir.Write("s1.safetensors", Build(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({1})));
  dir.Write("s2.safetensors", Build(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({2})));
  dir.Write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  auto set = TensorSet::OpenDir(dir.path());
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_NE((*set)->Find("b"), nullptr);
  EXPECT_EQ(FloatAt((*set)->Find("b")->data, 0), 2.0f);

  dir.Write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","c":"s2.safetensors"}})");
  set = TensorSet::OpenDir(dir.path());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("lists tensor 'c'"), std::string::npos) << set.status().message();

  dir.Write("model.safetensors.index.json", R"({"weight_map":{"a":"gone.safetensors"}})");
  set = TensorSet::OpenDir(dir.path());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("gone.safetensors: cannot open"), std::string::npos);
}

TEST(TensorSet, NoWeights) {
  TempDir dir;
  auto set = TensorSet::OpenDir(dir.path());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("no model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace impress
