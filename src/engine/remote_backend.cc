#include "engine/remote_backend.h"

namespace impress {

RemoteBackend::RemoteBackend(RemoteStore* remote, const ChunkGeometry& geometry, const std::string& fingerprint)
    : remote_(remote), geo_(geometry), root_(RootKey(fingerprint)) {}

bool RemoteBackend::KeyOf(uint64_t id, ContentKey* key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(id);
  if (it == keys_.end()) return false;
  *key = it->second;
  return true;
}

void RemoteBackend::Record(const std::vector<uint64_t>& ids, const std::vector<ContentKey>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) keys_.emplace(ids[i], keys[i]);
}

bool RemoteBackend::Holds(uint64_t chunk, int layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_.count(chunk) > 0;
}

Status RemoteBackend::Read(std::vector<ChunkRead>* read_list) {
  const std::vector<ChunkRead>& reads = *read_list;
  std::vector<RemoteStore::Read> rs(reads.size());
  for (size_t j = 0; j < reads.size(); ++j) {
    const ChunkRead& r = reads[j];
    if (!KeyOf(r.chunk_id, &rs[j].key))
      return Status::NotFound("chunk " + std::to_string(r.chunk_id) + " is neither on the local disk nor in the remote tier");
    rs[j].layer = r.layer, rs[j].parts = r.parts, rs[j].keys = r.keys, rs[j].values = r.values, rs[j].probe = r.probe;
  }
  remote_->ReadParts(geo_, &rs);
  Status first;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t j = 0; j < rs.size(); ++j) {
    if (rs[j].status.ok()) continue;
    lost_.insert(reads[j].chunk_id);
    if (first.ok()) first = rs[j].status;
  }
  if (!first.ok()) return Status::NotFound("remote tier: " + first.message());
  return Status::OK();
}

RemoteStore::Chunk RemoteBackend::Chunk(const std::shared_ptr<const std::vector<at::Tensor>>& owner, int64_t i,
                                        const ContentKey& key, const ContentKey& parent,
                                        std::vector<int32_t> tokens) const {
  RemoteStore::Chunk ch;
  ch.geometry = geo_;
  ch.key = key;
  ch.parent = parent;
  ch.tokens = std::move(tokens);
  const int64_t row = i * geo_.chunk_tokens;
  for (int l = 0; l < geo_.layers; ++l) {
    ch.keys.push_back((*owner)[3 * l][row].data_ptr());
    ch.values.push_back((*owner)[3 * l + 1][row].data_ptr());
    ch.probe.push_back((*owner)[3 * l + 2][row].data_ptr());
  }
  ch.owner = owner;
  return ch;
}

void RemoteBackend::Put(ChunkPut put, std::function<void(const Status&)> done) {
  if (put.order != nullptr) return PutCopy(put, done);
  const size_t c = static_cast<size_t>(geo_.chunk_tokens);
  const std::vector<ContentKey> keys = ChainKeys(root_, put.tokens, 0, put.ids.size(), geo_.chunk_tokens);
  Record(put.ids, keys);
  std::vector<RemoteStore::Chunk> chunks;
  for (size_t i = put.first; i < put.ids.size(); ++i)
    chunks.push_back(Chunk(put.kv, static_cast<int64_t>(i - put.first), keys[i], i == 0 ? root_ : keys[i - 1],
                           std::vector<int32_t>(put.tokens.begin() + i * c, put.tokens.begin() + (i + 1) * c)));
  remote_->WriteAsync(std::move(chunks));
  if (done) {
    const int64_t errors = remote_->counters().write_errors;
    remote_->Flush();
    done(remote_->counters().write_errors != errors ? Status::IOError("remote tier: a write failed") : Status::OK());
  }
}

void RemoteBackend::PutCopy(const ChunkPut& put, const std::function<void(const Status&)>& done) {
  ContentKey last;
  if (!KeyOf(put.source.back(), &last)) {
    if (done) done(Status::NotFound("the node's chunks have no content key"));
    return;
  }
  const std::vector<ContentKey> keys = CopyKeys(last, *put.order, put.source.size());
  std::vector<RemoteStore::Chunk> chunks;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < keys.size(); ++i) {
    chunks.push_back(Chunk(put.kv, static_cast<int64_t>(i), keys[i], last, {static_cast<int32_t>(i)}));
    ids.push_back(put.copy_first + i);
  }
  // Readers must find the whole copy once it is installed: wait for it.
  const int64_t errors = remote_->counters().write_errors;
  remote_->WriteAsync(std::move(chunks));
  remote_->Flush();
  if (remote_->counters().write_errors != errors) {
    if (done) done(Status::IOError("publishing a reordered copy failed"));
    return;
  }
  Record(ids, keys);
  if (done) done(Status::OK());
}

void RemoteBackend::Known(const ChunkPut& chunks) {
  if (chunks.order == nullptr) {
    Record(chunks.ids, ChainKeys(root_, chunks.tokens, 0, chunks.ids.size(), geo_.chunk_tokens));
    return;
  }
  ContentKey last;
  if (!KeyOf(chunks.source.back(), &last)) return;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < chunks.source.size(); ++i) ids.push_back(chunks.copy_first + i);
  Record(ids, CopyKeys(last, *chunks.order, ids.size()));
}

StatusOr<int64_t> RemoteBackend::Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                                          const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) {
  const int64_t total = static_cast<int64_t>(tokens.size()) / geo_.chunk_tokens;
  ContentKey from = root_;
  if (matched >= total || (matched > 0 && !KeyOf(parent, &from))) return int64_t{0};
  std::vector<ContentKey> keys;
  const int64_t found = remote_->FindChain(from, tokens, matched, total - matched, geo_.chunk_tokens, &keys);
  if (found == 0) return int64_t{0};
  ASSIGN_OR_RETURN(const std::vector<uint64_t> ids, adopt(found));
  if (static_cast<int64_t>(ids.size()) != found) return int64_t{0};
  keys.resize(found);
  Record(ids, keys);
  return found;
}

std::vector<uint64_t> RemoteBackend::Lost(const std::vector<uint64_t>& ids) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> out;
  for (uint64_t id : ids)
    if (lost_.count(id)) out.push_back(id);
  return out;
}

void RemoteBackend::ForgetLost(const std::vector<uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t id : ids) lost_.erase(id);
}

BackendFactory RemoteBackendFactory(RemoteStore* remote) {
  return [remote](const BackendContext& ctx) -> StatusOr<std::unique_ptr<ChunkBackend>> {
    return std::unique_ptr<ChunkBackend>(new RemoteBackend(remote, ctx.geometry, ctx.fingerprint));
  };
}

}  // namespace impress
