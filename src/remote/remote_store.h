// The shared remote tier: prefix KV chunks on a key-value service (a Redis
// Cluster, through a Connector: remote/connector.h), named by
// content (remote/content_key.h) so that every machine pointed at the same
// cluster shares them. Layout (docs/remote.md):
//
//   imp:{KEY}:m           marker: the chunk's parent key, tokens and KV codec
//   imp:{KEY}:L<l>:k|v|p  keys, values and probe keys of layer l, encoded with it
//
// Every value is [CRC-32C of the rest, 4 bytes little-endian][payload]. The
// {KEY} hash tag puts a chunk's marker and parts in one slot. A chunk's marker
// is written after all its parts, so a marker means the chunk was whole when
// written; its parts may since have been evicted, which a read reports.
//
// Faults are results, not crashes: a read whose part is missing, damaged or
// unreachable reports it in its status and is counted; a write that fails is
// counted and dropped. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/chunk_geometry.h"
#include "codec/encoded_chunk.h"
#include "common/pacer.h"
#include "common/status.h"
#include "remote/connector.h"
#include "remote/content_key.h"

namespace impress {


struct RemoteOptions {
  std::string url;                 // redis://HOST:PORT[,HOST:PORT...]
  double bytes_per_second = 0;     // cap on reads (0: none), to emulate a slower network
  int timeout_ms = 1000;           // connect and reply timeout per node
};

struct RemoteCounters {
  std::atomic<int64_t> lookups{0};       // marker reads
  std::atomic<int64_t> chunks_found{0};  // markers that matched
  std::atomic<int64_t> codec_mismatches{0};  // markers of this chunk written with another KV codec (refused)
  std::atomic<int64_t> parts_read{0};    // parts asked for
  std::atomic<int64_t> parts_missing{0};  // not in the cluster (never written, or evicted)
  std::atomic<int64_t> parts_corrupt{0};  // wrong size or checksum
  std::atomic<int64_t> read_errors{0};    // unreachable node, timeout, refused command
  std::atomic<int64_t> bytes_read{0};     // payload bytes of parts served
  std::atomic<int64_t> chunks_written{0};  // markers written (the chunk's parts before them)
  std::atomic<int64_t> write_errors{0};   // parts or markers that failed to be written
  std::atomic<int64_t> bytes_written{0};
  ConnectorCounters cluster;              // redirects, slot reloads, reconnects, timeouts
};

class RemoteStore {
 public:
  // Connects to the service `opt.url` names. Errors (one line, naming the
  // address): a malformed URL, no node reachable, a node not in cluster mode.
  static StatusOr<std::unique_ptr<RemoteStore>> Connect(const RemoteOptions& opt);
  ~RemoteStore();  // writes still queued are sent first (Flush)

  // How many of chunks first..first+count-1 of `tokens` (chunk i is tokens
  // [i*C, (i+1)*C)), chained from `parent` (the key of chunk first-1,
  // RootKey for 0), the cluster holds, from the first: one pipelined round of
  // marker reads, each marker checked against its parent and tokens. A fault
  // ends the run: what follows is unknown. `keys` gets the count chunks' keys.
  // A marker of chunk i written with another codec than ChunkCodec(codec, i)
  // ends it too: counted, and said once on stderr (one line naming both).
  int64_t FindChain(const ContentKey& parent, const std::vector<int32_t>& tokens, size_t first, size_t count,
                    int chunk_tokens, KvCodec codec, std::vector<ContentKey>* keys);

  // One chunk-layer's parts to read into caller buffers (sizes from the geometry).
  struct Read {
    ContentKey key;
    int layer = 0;
    uint8_t parts = 0;  // ChunkPart bits
    KvCodec codec = KvCodec::kNone;  // the chunk's: each part is PartBytes(part, codec)
    void* keys = nullptr;
    void* values = nullptr;
    void* probe = nullptr;
    Status status;  // set by ReadParts: OK, NotFound (missing), Corruption, IOError
  };
  // Reads every asked part of `reads` in one pipelined round per master,
  // paced by opt.bytes_per_second. Each read's status says how it went.
  void ReadParts(const ChunkGeometry& g, std::vector<Read>* reads);

  // A new chunk to publish: one EncodedChunk per layer, whose `bytes` are
  // its parts as stored (encoded with `codec`, each geometry.PartBytes(part, codec) long).
  struct Chunk {
    ChunkGeometry geometry;
    ContentKey key, parent;
    std::vector<int32_t> tokens;
    KvCodec codec = KvCodec::kNone;
    std::vector<EncodedChunk> layers;
  };
  // Queues `chunks` for a background writer; returns at once.
  void WriteAsync(std::vector<Chunk> chunks);
  // Waits until every queued write has been sent (or has failed).
  void Flush();

  // Per master: address, keys, used and max memory, eviction policy, evicted keys.
  StatusOr<nlohmann::ordered_json> ClusterStats();

  const RemoteCounters& counters() const { return counters_; }
  const RemoteOptions& options() const { return opt_; }

 private:
  explicit RemoteStore(const RemoteOptions& opt);
  void WriterLoop();
  void WriteOne(const Chunk& chunk);

  RemoteOptions opt_;
  std::unique_ptr<Pacer> pacer_;
  RemoteCounters counters_;
  std::unique_ptr<Connector> connector_;
  std::atomic<bool> told_mismatch_{false};
  // The writer: a queue of batches, drained in order by one thread.
  std::mutex write_mu_;
  std::condition_variable write_cv_, drained_cv_;
  std::deque<std::vector<Chunk>> queue_;  // guarded by write_mu_
  bool writing_ = false, stop_ = false;  // guarded by write_mu_
  std::thread writer_;
};

// Key names (exposed for tests and tools that inspect the cluster).
std::string MarkerKeyName(const ContentKey& k);
std::string PartKeyName(const ContentKey& k, int layer, int part);  // part 0..2: k, v, p

}  // namespace impress
