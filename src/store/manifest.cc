#include "store/manifest.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_get.h"
#include "common/named.h"

namespace impress {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

json GeometryJson(const ChunkGeometry& g) {
  json j = {{"chunk_tokens", g.chunk_tokens}, {"layers", g.layers}, {"kv_heads", g.kv_heads},
            {"head_dim", g.head_dim}, {"probe_kv_heads", g.probe_kv_heads}, {"elem_bytes", g.elem_bytes}};
  if (g.codec != KvCodec::kNone) j["codec"] = KvCodecName(g.codec);  // absent: the values themselves
  if (g.digests) j["digests"] = true;  // absent: no key digests
  if (g.digests && *g.digests != DigestCodec::kInt4) j["digest_codec"] = NameOf(DigestCodecNames(), *g.digests);  // absent: int4
  return j;
}

}  // namespace

std::string GeometryText(const ChunkGeometry& g) { return GeometryJson(g).dump(); }

std::string ManifestText(const StoreIdentity& id) {
  return json{{"format", kFormatVersion}, {"fingerprint", id.fingerprint}, {"geometry", GeometryJson(id.geometry)}}
             .dump() +
         "\n";
}

Status CheckGeometry(const std::string& dir, const ChunkGeometry& g) {
  if (g.chunk_tokens < 1 || g.chunk_tokens > (1 << 16) || g.layers < 1 || g.layers > 4096 || g.kv_heads < 1 ||
      g.kv_heads > 4096 || g.head_dim < 1 || g.head_dim > 65536 || g.probe_kv_heads < 1 ||
      g.probe_kv_heads > g.kv_heads || (g.elem_bytes != 1 && g.elem_bytes != 2 && g.elem_bytes != 4) ||
      (g.codec != KvCodec::kNone && (g.elem_bytes != 2 || g.head_dim % 2 != 0)))
    return Status::Corruption(dir + "/MANIFEST: corrupt manifest: geometry " + GeometryText(g) + " is out of range");
  return Status::OK();
}

StatusOr<StoreIdentity> ReadManifest(Env* env, const std::string& dir) {
  const std::string manifest = dir + "/MANIFEST";
  StatusOr<std::string> text = ReadFileToString(env, manifest);
  if (text.status().IsNotFound()) return Status::NotFound(dir + ": no store here (MANIFEST missing)");
  if (!text.ok()) return text.status();
  StoreIdentity id;
  int format = 0;
  try {
    const json j = json::parse(*text);
    if (!j.is_object()) throw std::invalid_argument("not a JSON object");
    format = GetInteger<int>(j.at("format"));
    const json& g = j.at("geometry");
    ChunkGeometry& geo = id.geometry;  // codec and digests below, when the manifest names them
    geo.chunk_tokens = GetInteger<int>(g.at("chunk_tokens"));
    geo.layers = GetInteger<int>(g.at("layers"));
    geo.kv_heads = GetInteger<int>(g.at("kv_heads"));
    geo.head_dim = GetInteger<int>(g.at("head_dim"));
    geo.probe_kv_heads = GetInteger<int>(g.at("probe_kv_heads"));
    geo.elem_bytes = GetInteger<int>(g.at("elem_bytes"));
    if (g.contains("codec")) {
      StatusOr<KvCodec> c = ParseKvCodec(g.at("codec").get<std::string>());
      if (!c.ok() || *c == KvCodec::kNone) {
        const std::vector<std::string>& names = KvCodecNames();  // fp16 first: a store without codec names none
        throw std::invalid_argument("codec " + g.at("codec").dump() + " is not one of " +
                                    JoinNames(std::vector<std::string>(names.begin() + 1, names.end())));
      }
      id.geometry.codec = *c;
    }
    DigestCodec digest = DigestCodec::kInt4;
    if (g.contains("digest_codec")) {
      StatusOr<DigestCodec> c = ParseNamed<DigestCodec>(DigestCodecNames(), g.at("digest_codec").get<std::string>(),
                                                        "digest_codec", "codec");
      if (!c.ok()) throw std::invalid_argument(c.status().message());
      digest = *c;
    }
    if (g.contains("digests") && g.at("digests").get<bool>()) id.geometry.digests = digest;
    id.fingerprint = j.at("fingerprint").get<std::string>();
  } catch (const std::exception& e) {
    return Status::Corruption(manifest + ": corrupt manifest: " + e.what());
  }
  if (format != kFormatVersion)
    return Status::InvalidArgument(manifest + ": store format " + std::to_string(format) + ", expected " +
                                   std::to_string(kFormatVersion));
  RETURN_IF_ERROR(CheckGeometry(dir, id.geometry));
  return id;
}

}  // namespace impress
