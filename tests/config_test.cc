// config.json parsing and weight/config agreement, including bad input.
#include "model/config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "model/architecture.h"
#include "model/model.h"
#include "test_util.h"

namespace impress {
namespace {

using testing::TempDir;

TEST(Config, ParsesOptAndLlamaFields) {
  TempDir dir;
  dir.Write("config.json", R"({"model_type":"opt","vocab_size":100,"hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"ffn_dim":128,"max_position_embeddings":512,"word_embed_proj_dim":32,
    "do_layer_norm_before":false})");
  auto c = LoadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_FALSE(c->do_layer_norm_before);
  EXPECT_EQ(c->word_embed_proj_dim, 32);
  EXPECT_EQ(c->KvBytesPerToken(2), 2 * 2 * 4 * 16 * 2);

  dir.Write("config.json", R"({"model_type":"llama","vocab_size":100,"hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":8,"num_key_value_heads":2,"intermediate_size":128,"max_position_embeddings":512,
    "rope_scaling":{"type":"linear","factor":4.0},"rope_theta":500000.0})");
  c = LoadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->rope_linear_factor, 4.0);
  EXPECT_EQ(c->rope_theta, 500000.0);

  // Newer transformers write rope_parameters instead of rope_theta.
  dir.Write("config.json", R"({"model_type":"llama","vocab_size":100,"hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":8,"intermediate_size":128,"max_position_embeddings":512,
    "rope_parameters":{"rope_theta":100000.0,"rope_type":"default"}})");
  c = LoadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rope_theta, 100000.0);
}

TEST(Config, BadInputNamesFileAndField) {
  TempDir dir;
  struct Case {
    std::string json, expect;
  } cases[] = {
      {"{", "not valid JSON"},
      {R"({"model_type":"gpt_neox","vocab_size":1,"hidden_size":1,"num_hidden_layers":1,"num_attention_heads":1})",
       "unknown architecture model_type 'gpt_neox'"},
      {R"({"model_type":"llama","hidden_size":64})", "missing field 'vocab_size'"},
      {R"({"model_type":"llama","vocab_size":"many","hidden_size":64})", "field 'vocab_size' is not an integer"},
      {R"({"model_type":"llama","vocab_size":10,"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":3,
          "num_key_value_heads":2,"intermediate_size":8,"max_position_embeddings":8})",
       "not a multiple of num_key_value_heads"},
      {R"({"model_type":"llama","vocab_size":10,"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,
          "intermediate_size":8,"max_position_embeddings":8,"rope_scaling":{"type":"yarn","factor":2}})",
       "type 'yarn' is not supported"},
  };
  for (const auto& c : cases) {
    dir.Write("config.json", c.json);
    auto r = LoadModelConfig(dir.File("config.json"));
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(dir.File("config.json")), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
  auto missing = LoadModelConfig(dir.File("absent.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.json: cannot open"), std::string::npos);
}

// The architecture table decides what loads: each row's model_type is found,
// every other is refused with the table's names, and an OPT config whose
// heads do not divide its width is refused by OPT's own row.
TEST(Config, ArchitecturesComeFromOneTable) {
  std::string names;
  for (const Architecture& a : Architectures()) {
    EXPECT_EQ(FindArchitecture(a.model_type), &a);
    names += (names.empty() ? "" : ", ") + std::string(a.model_type);
  }
  EXPECT_EQ(ArchitectureNames(), names);
  EXPECT_EQ(FindArchitecture("bert"), nullptr);
  TempDir dir;
  dir.Write("config.json", R"({"model_type":"bert","vocab_size":1,"hidden_size":1,"num_hidden_layers":1,"num_attention_heads":1})");
  auto r = LoadModelConfig(dir.File("config.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(supported: " + names + ")"), std::string::npos) << r.status().message();
  dir.Write("config.json", R"({"model_type":"opt","vocab_size":10,"hidden_size":10,"num_hidden_layers":1,
      "num_attention_heads":3,"ffn_dim":8,"max_position_embeddings":8})");
  r = LoadModelConfig(dir.File("config.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hidden_size is not a multiple of num_attention_heads"), std::string::npos)
      << r.status().message();
}

// A config that disagrees with the weights' shapes is an error naming the tensor.
TEST(Config, ShapesThatDisagreeWithWeights) {
  auto manifest = testing::FixtureManifest();
  ASSERT_TRUE(manifest["models"].contains("tiny-llama-gqa"));
  const std::string src = manifest["models"]["tiny-llama-gqa"];
  TempDir dir;
  std::filesystem::copy_file(src + "/model.safetensors", dir.File("model.safetensors"));
  std::ifstream in(src + "/config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  cfg["intermediate_size"] = cfg["intermediate_size"].get<int>() + 8;
  dir.Write("config.json", cfg.dump());
  auto m = LoadModel(dir.path(), LoadOptions{"cpu", "float32"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape"),
            std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace impress
