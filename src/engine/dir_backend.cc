#include "engine/dir_backend.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

namespace impress {
namespace {

class DirBackend final : public ChunkBackend {
 public:
  DirBackend(std::string dir, const ChunkGeometry& g) : dir_(std::move(dir)), g_(g) {
    std::filesystem::create_directories(dir_);
  }
  Tier tier() const override { return Tier::kRemote; }
  bool Holds(uint64_t chunk, int layer) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return names_.count(chunk) > 0;
  }
  Status Read(const std::vector<ChunkRead>& reads) override {
    for (const ChunkRead& r : reads) {
      std::string name;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = names_.find(r.chunk_id);
        if (it == names_.end()) return Status::NotFound("dir backend: chunk " + std::to_string(r.chunk_id));
        name = it->second;
      }
      void* dst[3] = {r.keys, r.values, r.probe};
      for (int p = 0; p < 3; ++p) {
        if (!(r.parts & (1 << p))) continue;
        std::ifstream f(Path(name, r.layer, p), std::ios::binary);
        f.read(static_cast<char*>(dst[p]), static_cast<std::streamsize>(Bytes(p)));
        if (!f) return Status::NotFound("dir backend: " + Path(name, r.layer, p) + ": missing or short");
      }
    }
    return Status::OK();
  }
  void Put(ChunkPut put, std::function<void(const Status&)> done) override {
    if (put.order != nullptr) {
      if (done) done(Status::IOError("dir backend: no reordered copies"));
      return;
    }
    for (size_t i = put.first; i < put.ids.size(); ++i) {
      const std::string name = Name(put.tokens, i + 1);
      for (int l = 0; l < g_.layers; ++l)
        for (int p = 0; p < 3; ++p) {
          const auto* src = static_cast<const char*>((*put.kv)[3 * l + p][(i - put.first) * g_.chunk_tokens].data_ptr());
          std::ofstream(Path(name, l, p), std::ios::binary).write(src, static_cast<std::streamsize>(Bytes(p)));
        }
      std::lock_guard<std::mutex> lock(mu_);
      names_[put.ids[i]] = name;
    }
    if (done) done(Status::OK());
  }
  void Known(const ChunkPut& chunks) override {
    if (chunks.order != nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < chunks.ids.size(); ++i)
      if (std::filesystem::exists(Path(Name(chunks.tokens, i + 1), g_.layers - 1, 2))) names_[chunks.ids[i]] = Name(chunks.tokens, i + 1);
  }
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                             const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) override {
    const int64_t total = static_cast<int64_t>(tokens.size()) / g_.chunk_tokens;
    int64_t found = 0;
    while (matched + found < total &&
           std::filesystem::exists(Path(Name(tokens, matched + found + 1), g_.layers - 1, 2)))
      found++;
    if (found == 0) return int64_t{0};
    ASSIGN_OR_RETURN(const std::vector<uint64_t> ids, adopt(found));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < ids.size(); ++i) names_[ids[i]] = Name(tokens, matched + i + 1);
    return found;
  }

 private:
  size_t Bytes(int part) const { return part == 2 ? g_.ProbeBytes() : g_.KeyBytes(); }
  // FNV-1a of the first `chunks` chunks' tokens.
  std::string Name(const std::vector<int32_t>& tokens, size_t chunks) const {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < chunks * g_.chunk_tokens; ++i) h = (h ^ static_cast<uint32_t>(tokens[i])) * 1099511628211ull;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
  std::string Path(const std::string& name, int layer, int part) const {
    return dir_ + "/" + name + ".L" + std::to_string(layer) + "." + "kvp"[part];
  }

  std::string dir_;
  ChunkGeometry g_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::string> names_;  // GUARDED_BY(mu_)
};

}  // namespace

BackendFactory DirBackendFactory(const std::string& dir) {
  return [dir](const BackendContext& ctx) -> StatusOr<std::unique_ptr<ChunkBackend>> {
    return std::unique_ptr<ChunkBackend>(new DirBackend(dir + "/" + std::to_string(std::hash<std::string>()(ctx.fingerprint)), ctx.geometry));
  };
}

}  // namespace impress
