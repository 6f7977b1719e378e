// The shared remote tier (remote/remote_store.h) as a chunk backend. It names
// chunks by content (remote/content_key.h): it keeps the content key of every
// chunk the index holds that it can name (original chunks from their tokens,
// reordered copies from their node's last key and packing), so that the
// index's chunk ids never leave this machine. Under a KV codec it stores the
// parts as the disk does, encoded (a chunk's codec follows from its place in
// its prefix: ChunkCodec), and the codec is part of every content key, so
// stores with different codecs never share a chunk. A read that fails (missing,
// damaged, unreachable) is NotFound and the chunk is remembered as lost until
// the home backend keeps it (ChunkBackend::Lost). Thread-safe.
#pragma once

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "kvstore/chunk_backend.h"
#include "remote/content_key.h"
#include "remote/remote_store.h"

namespace impress {

class RemoteBackend final : public ChunkBackend {
 public:
  // `remote` outlives the backend; `fingerprint` is the store's (RootKey).
  RemoteBackend(RemoteStore* remote, const ChunkGeometry& geometry, const std::string& fingerprint);

  Tier tier() const override { return Tier::kRemote; }
  bool Holds(uint64_t chunk, int layer) const override;
  Status Read(std::vector<ChunkRead>* reads) override;
  // Original chunks go to the writer queue; a reordered copy is waited for
  // (readers must find all of it once it is installed) and named only once written.
  void Put(PrefixPut put, std::function<void(const Status&)> done) override;
  void PutCopy(CopyPut put, std::function<void(const Status&)> done) override;
  void Known(const PrefixPut& prefix) override;
  void KnownCopy(const CopyPut& copy) override;
  StatusOr<int64_t> Discover(const std::vector<int32_t>& tokens, int64_t matched, uint64_t parent,
                             const std::function<StatusOr<std::vector<uint64_t>>(int64_t)>& adopt) override;
  std::vector<uint64_t> Lost(const std::vector<uint64_t>& ids) const override;
  void ForgetLost(const std::vector<uint64_t>& ids) override;

 private:
  // What the backend knows of a chunk id: its content key and codec.
  struct Named {
    ContentKey key;
    KvCodec codec = KvCodec::kNone;
  };
  bool KeyOf(uint64_t id, Named* named) const;
  void Record(const std::vector<uint64_t>& ids, const std::vector<ContentKey>& keys, const std::vector<KvCodec>& codecs);
  // The codecs of chunks first..first+n-1 of a prefix.
  std::vector<KvCodec> PrefixCodecs(size_t first, size_t n) const;
  // The codecs of a reordered copy of the node whose chunks are `source`
  // (copy chunk i holds the place of source[i]); empty when one is unnamed.
  std::vector<KvCodec> CopyCodecs(const std::vector<uint64_t>& source) const;
  // Chunk i of `chunks` (n per layer, in (layer, chunk) order: its parts as
  // the home backend stored them), as published.
  RemoteStore::Chunk Chunk(const std::shared_ptr<const std::vector<EncodedChunk>>& chunks, int64_t i, int64_t n,
                           KvCodec codec, const ContentKey& key, const ContentKey& parent,
                           std::vector<int32_t> tokens) const;

  RemoteStore* remote_;
  ChunkGeometry geo_;
  ContentKey root_;
  mutable std::mutex mu_;  // a leaf lock
  std::unordered_map<uint64_t, Named> keys_;  // GUARDED_BY(mu_)
  std::unordered_set<uint64_t> lost_;              // GUARDED_BY(mu_)
};

// Makes a RemoteBackend over `remote` (which outlives every store made with it).
BackendFactory RemoteBackendFactory(RemoteStore* remote);

}  // namespace impress
