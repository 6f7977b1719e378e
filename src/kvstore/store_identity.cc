#include "kvstore/store_identity.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cache/chunk_key.h"
#include "common/named.h"
#include "kvstore/prefix_store.h"
#include "model/model.h"
#include "select/probe_heads.h"
#include "common/crc32c.h"
#include "store/env.h"

namespace impress {
namespace {

uint32_t WeightsChecksum(const std::string& dir) {
  std::string path = dir + "/model.safetensors";
  if (!std::filesystem::exists(path)) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") path = std::min(path, e.path().string());
  }
  auto file = Env::Default()->Open(path, OpenMode::kRead);
  if (!file.ok()) return 0;
  auto size = (*file)->Size();
  if (!size.ok() || *size == 0) return 0;
  std::vector<char> buf(std::min<uint64_t>(*size, 1 << 20));  // the first MiB: the header and the first tensors
  if (!(*file)->Read(0, buf.size(), buf.data()).ok()) return 0;
  return Crc32c(buf.data(), buf.size());
}

const std::vector<std::pair<std::string, at::ScalarType>>& KvDtypes() {
  static const std::vector<std::pair<std::string, at::ScalarType>> types = {
      {"float16", at::kHalf}, {"bfloat16", at::kBFloat16}, {"float32", at::kFloat}};
  return types;
}

}  // namespace

const std::vector<std::string>& KvDtypeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [name, type] : KvDtypes()) n.push_back(name);
    return n;
  }();
  return names;
}

StatusOr<at::ScalarType> KvDtype(const std::string& s) {
  for (const auto& [name, type] : KvDtypes())
    if (s == name) return type;
  return Status::InvalidArgument("--kv-dtype: unknown '" + s + "' (" + JoinNames(KvDtypeNames()) + ")");
}

std::string StoreFingerprint(const Model& model, const std::string& kv_dtype, int chunk_tokens) {
  const ModelConfig& c = model.config();
  char crc[16];
  std::snprintf(crc, sizeof(crc), "%08x", WeightsChecksum(model.dir()));
  return c.model_type + "-L" + std::to_string(c.num_layers) + "-D" + std::to_string(c.hidden_size) + "-KV" +
         std::to_string(c.num_kv_heads) + "x" + std::to_string(c.head_dim) + "-V" + std::to_string(c.vocab_size) +
         "-w" + crc + "/" + kv_dtype + "/c" + std::to_string(chunk_tokens);
}

StatusOr<StoreIdentity> StoreIdentityFor(const Model& model, const PrefixStoreOptions& opt) {
  if (opt.chunk_tokens <= 0) return Status::InvalidArgument("--chunk must be positive");
  ASSIGN_OR_RETURN(const at::ScalarType kv_type, KvDtype(opt.kv_dtype));
  const ModelConfig& c = model.config();
  if (c.num_layers > ChunkKey::kMaxLayers)
    return Status::InvalidArgument(model.dir() + ": " + std::to_string(c.num_layers) + " layers; a store keys at most " +
                                   std::to_string(ChunkKey::kMaxLayers));
  StoreIdentity id;
  ChunkGeometry& geo = id.geometry;
  geo.chunk_tokens = opt.chunk_tokens;
  geo.layers = c.num_layers;
  geo.kv_heads = c.num_kv_heads;
  geo.head_dim = c.head_dim;
  geo.probe_kv_heads = static_cast<int>(ProbeKvHeads(opt.probe_heads, c.num_heads, c.num_kv_heads, opt.probe_layout));
  geo.elem_bytes = static_cast<int>(c10::elementSize(kv_type));
  if (opt.kv_codec != KvCodec::kNone && kv_type != at::kHalf)
    return Status::InvalidArgument(std::string("--kv-codec ") + KvCodecName(opt.kv_codec) + " encodes float16 KV, not " +
                                   opt.kv_dtype);
  id.geometry.codec = opt.kv_codec;
  id.geometry.digests = opt.digests;
  id.fingerprint = StoreFingerprint(model, opt.kv_dtype, opt.chunk_tokens);
  return id;
}

}  // namespace impress
