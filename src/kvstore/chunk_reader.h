// One read path for a layer's chunks: the tiered cache first, then the
// backends in order (the first that holds a chunk serves it), each missing
// part read straight into its tensor, page-locked under CUDA so that copies
// to the device are asynchronous, or, under a KV codec, read encoded and
// decoded. A chunk whose keys and values came from a backend is then offered
// to the cache, with its encoded bytes. Thread-safe (the cache and the
// backends are).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/chunk_key.h"
#include "cache/tiered_cache.h"
#include "kvstore/backends.h"
#include "kvstore/load_stream.h"

namespace impress {

// What one layer's load touched.
struct LoadStats {
  int64_t chunks = 0;                // (chunk, layer) pairs served, each counted once
  TierCounts hits;                   // of those, found in a cache tier (GPU, CPU)
  TierCounts read;                   // of those, read (in one or more parts) from a backend, by its tier
  TierCounts bytes;                  // served per tier (GPU, CPU, disk, remote)
  LoadStats& operator+=(const LoadStats& o) {
    bytes += o.bytes;
    hits += o.hits;
    chunks += o.chunks;
    read += o.read;
    return *this;
  }
};

// Parts of one (chunk, layer) as a selective load gathers them: the caches'
// chunk type (keys and values [C, heads, d] on the model's device, and their
// encoded bytes as a backend with a codec served them) with the probe keys
// beside it; each part undefined until fetched.
struct ChunkParts : ChunkKv {
  at::Tensor probe;
  Tier tier = Tier::kDisk;  // where its keys and values came from
};

struct ChunkReaderOptions {
  ChunkGeometry geometry;
  at::ScalarType kv_type = at::kHalf;     // as stored and cached
  at::Device device = at::kCPU;           // the model's
  at::ScalarType compute_type = at::kFloat;  // the model's dtype
};

class ChunkReader {
 public:
  // `cache`, `backends` and `stream` outlive the reader.
  ChunkReader(const ChunkReaderOptions& opt, TieredCache* cache, Backends* backends, const LoadStream* stream);

  // Makes the parts asked for chunks[i] (`parts[i]`, ChunkPart bits) present
  // in (*out)[i]: a cached chunk gives keys and values (and probe keys as a
  // slice of its keys), a missing one is read from the backends, only the
  // parts asked for. One batch per backend. On CUDA each part read is copied
  // up once, enqueued on the calling thread's stream, and that copy is what
  // the cache is offered.
  // `spans` (may be null) gets a span around each burst of device work.
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
               std::vector<ChunkParts>* out, LoadStats* stats, DeviceSpans* spans = nullptr);
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, uint8_t parts, std::vector<ChunkParts>* out,
               LoadStats* stats) {
    return Fetch(chunks, layer, std::vector<uint8_t>(chunks.size(), parts), out, stats);
  }
  // Tells the score policy that every token of `chunks` was used (no effect
  // under LRU and LFU). Every load that is not a selection reports this way.
  void ObserveWhole(const std::vector<uint64_t>& chunks, int layer);
  // Chunk parts [C, H, d] in token order -> [H, n*C, d] on the model's
  // device and in its dtype; with `rows` (int64, host or device) the rows of
  // the concatenation they name, in their order: [H, rows, d]; with `heads`
  // only heads 0..heads-1; with `room`, that many unset rows after each
  // head's (kvstore/stack_chunks.h).
  at::Tensor StackChunks(const std::vector<at::Tensor>& parts, const at::Tensor& rows = {}, int64_t heads = 0,
                         int64_t room = 0) const;

  // On CUDA, takes `bytes` of pinned host memory in the sizes reads use and
  // gives it back, so that LibTorch's pinned pool holds it before anything
  // is timed (pinned allocation is slow). A no-op elsewhere.
  void WarmPinnedPool(int64_t bytes) const;

 private:
  // Fetch's steps, in order: what the caches serve, the reads of the rest
  // into their buffers, those reads decoded and sent up, the chunks now
  // whole offered to the cache.
  struct Pending;
  std::vector<Pending> ServeFromCache(const std::vector<uint64_t>& chunks, int layer,
                                      const std::vector<uint8_t>& parts, std::vector<ChunkParts>* out,
                                      LoadStats* stats);
  std::vector<ChunkRead> PlanReads(const std::vector<uint64_t>& chunks, int layer,
                                   std::vector<Pending>* pending) const;
  void TakeReads(const std::vector<ChunkRead>& reads, const std::vector<Tier>& from, std::vector<Pending>* pending,
                 std::vector<ChunkParts>* out, LoadStats* stats, TierCounts* bytes) const;
  void OfferToCache(const std::vector<uint64_t>& chunks, int layer, const std::vector<Pending>& pending,
                    const std::vector<ChunkParts>& out);

  ChunkReaderOptions opt_;
  TieredCache* cache_;
  Backends* backends_;
  const LoadStream* stream_;
};

}  // namespace impress
