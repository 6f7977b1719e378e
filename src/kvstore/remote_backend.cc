#include "kvstore/remote_backend.h"

namespace impress {

RemoteBackend::RemoteBackend(RemoteStore* remote, const ChunkGeometry& geometry, const std::string& fingerprint)
    : remote_(remote), geo_(geometry), root_(StoreRootKey(fingerprint, geometry.codec)) {}

bool RemoteBackend::KeyOf(uint64_t id, Named* named) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(id);
  if (it == keys_.end()) return false;
  *named = it->second;
  return true;
}

void RemoteBackend::Record(const std::vector<uint64_t>& ids, const std::vector<ContentKey>& keys,
                           const std::vector<KvCodec>& codecs) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) keys_.emplace(ids[i], Named{keys[i], codecs[i]});
}

std::vector<KvCodec> RemoteBackend::PrefixCodecs(size_t first, size_t n) const {
  std::vector<KvCodec> out;
  for (size_t i = 0; i < n; ++i) out.push_back(ChunkCodec(geo_.codec, static_cast<int64_t>(first + i)));
  return out;
}

std::vector<KvCodec> RemoteBackend::CopyCodecs(const std::vector<uint64_t>& source) const {
  std::vector<KvCodec> out;
  for (uint64_t id : source) {
    Named n;
    if (!KeyOf(id, &n)) return {};
    out.push_back(n.codec);
  }
  return out;
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
    Named named;
    if (!KeyOf(r.chunk_id, &named))
      return Status::NotFound("chunk " + std::to_string(r.chunk_id) + " is neither on the local disk nor in the remote tier");
    rs[j].key = named.key, rs[j].codec = named.codec;
    rs[j].layer = r.layer, rs[j].parts = r.parts, rs[j].keys = r.keys, rs[j].values = r.values, rs[j].probe = r.probe;
    (*read_list)[j].codec = named.codec;
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

RemoteStore::Chunk RemoteBackend::Chunk(const std::shared_ptr<const std::vector<EncodedChunk>>& chunks, int64_t i,
                                        int64_t n, KvCodec codec, const ContentKey& key, const ContentKey& parent,
                                        std::vector<int32_t> tokens) const {
  RemoteStore::Chunk ch;
  ch.geometry = geo_;
  ch.key = key;
  ch.parent = parent;
  ch.tokens = std::move(tokens);
  ch.codec = codec;
  for (int64_t l = 0; l < geo_.layers; ++l) {
    const EncodedChunk& e = (*chunks)[static_cast<size_t>(l * n + i)];
    IMPRESS_CHECK(e.codec == codec);
    ch.layers.push_back(EncodedChunk{e.chunk_id, e.layer, e.codec, e.bytes, {}, {}});  // the bytes only: what is published
  }
  return ch;
}

void RemoteBackend::Put(PrefixPut put, std::function<void(const Status&)> done) {
  const size_t c = static_cast<size_t>(geo_.chunk_tokens);
  const std::vector<ContentKey> keys = ChainKeys(root_, put.tokens, 0, put.ids.size(), geo_.chunk_tokens);
  const std::vector<KvCodec> codecs = PrefixCodecs(0, put.ids.size());
  Record(put.ids, keys, codecs);
  std::vector<RemoteStore::Chunk> chunks;
  const int64_t n = static_cast<int64_t>(put.ids.size() - put.first);
  for (size_t i = put.first; i < put.ids.size(); ++i)
    chunks.push_back(Chunk(put.chunks, static_cast<int64_t>(i - put.first), n, codecs[i], keys[i], i == 0 ? root_ : keys[i - 1],
                           std::vector<int32_t>(put.tokens.begin() + i * c, put.tokens.begin() + (i + 1) * c)));
  remote_->WriteAsync(std::move(chunks));
  if (done) {
    const int64_t errors = remote_->counters().write_errors;
    remote_->Flush();
    done(remote_->counters().write_errors != errors ? Status::IOError("remote tier: a write failed") : Status::OK());
  }
}

void RemoteBackend::PutCopy(CopyPut put, std::function<void(const Status&)> done) {
  Named last;
  const std::vector<KvCodec> codecs = CopyCodecs(put.source);
  if (!KeyOf(put.source.back(), &last) || codecs.empty()) {
    if (done) done(Status::NotFound("the node's chunks have no content key"));
    return;
  }
  const std::vector<ContentKey> keys = CopyKeys(last.key, *put.order, put.source.size());
  std::vector<RemoteStore::Chunk> chunks;
  std::vector<uint64_t> ids;
  const int64_t n = static_cast<int64_t>(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    chunks.push_back(Chunk(put.chunks, static_cast<int64_t>(i), n, codecs[i], keys[i], last.key, {static_cast<int32_t>(i)}));
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
  Record(ids, keys, codecs);
  if (done) done(Status::OK());
}

void RemoteBackend::Known(const PrefixPut& prefix) {
  Record(prefix.ids, ChainKeys(root_, prefix.tokens, 0, prefix.ids.size(), geo_.chunk_tokens),
         PrefixCodecs(0, prefix.ids.size()));
}

void RemoteBackend::KnownCopy(const CopyPut& copy) {
  Named last;
  const std::vector<KvCodec> codecs = CopyCodecs(copy.source);
  if (!KeyOf(copy.source.back(), &last) || codecs.empty()) return;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < copy.source.size(); ++i) ids.push_back(copy.copy_first + i);
  Record(ids, CopyKeys(last.key, *copy.order, ids.size()), codecs);
}

StatusOr<int64_t> RemoteBackend::Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                                          const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) {
  const int64_t total = static_cast<int64_t>(tokens.size()) / geo_.chunk_tokens;
  Named from{root_, KvCodec::kNone};
  if (matched >= total || (matched > 0 && !KeyOf(parent, &from))) return int64_t{0};
  std::vector<ContentKey> keys;
  const int64_t found =
      remote_->FindChain(from.key, tokens, matched, total - matched, geo_.chunk_tokens, geo_.codec, &keys);
  if (found == 0) return int64_t{0};
  ASSIGN_OR_RETURN(const std::vector<uint64_t> ids, adopt(found));
  if (static_cast<int64_t>(ids.size()) != found) return int64_t{0};
  keys.resize(found);
  Record(ids, keys, PrefixCodecs(static_cast<size_t>(matched), static_cast<size_t>(found)));
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
