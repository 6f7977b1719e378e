// Prefix KV across the three tiers: the radix tree says which prefixes are
// stored, the tiered cache holds some chunks in GPU and CPU memory, and the
// chunk store holds every chunk on disk. Owns all three and keeps them
// consistent: the tree is rebuilt from the store's log when it is reopened.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/radix_tree.h"
#include "cache/tiered_cache.h"
#include "common/status.h"
#include "model/kv_provider.h"
#include "store/chunk_store.h"

namespace impress {

class Model;

struct PrefixStoreOptions {
  std::string dir;                  // where the chunk store lives
  int chunk_tokens = 64;
  std::string kv_dtype = "float16"; // float16, bfloat16 or float32 on disk and in the caches
  int probe_heads = 3;              // query heads whose keys get a second, contiguous copy
  TierOptions tiers;
  double disk_bytes_per_second = 0; // cap on disk reads (0: none)
  int io_threads = 8;
};

// What one layer's load touched.
struct LoadStats {
  int64_t chunks = 0;                // (chunk, layer) pairs served, each counted once
  int64_t hits[2] = {0, 0};          // GPU, CPU
  int64_t disk_chunks = 0;           // of those, read (in one or more parts) from disk
  int64_t bytes[3] = {0, 0, 0};      // served from GPU, CPU, disk
};

class PrefixStore {
 public:
  static StatusOr<std::unique_ptr<PrefixStore>> Open(const Model& model, const PrefixStoreOptions& opt);

  // Keys and values of `chunks` in layer `layer`, in token order, as
  // [num_kv_heads, chunks * C, head_dim] on the model's device and dtype.
  // A chunk that fails its checksum is an error (the caller recomputes).
  Status LoadLayer(const std::vector<uint64_t>& chunks, int layer, at::Tensor* k, at::Tensor* v, LoadStats* stats);
  // Stores the whole chunks of `tokens` that the tree does not hold yet,
  // taking their KV from `kv`, whose entry 0 is the token at position
  // `kv_offset` (it must hold those positions), and caches them. Returns the
  // number of chunks added.
  StatusOr<int64_t> Insert(const std::vector<int32_t>& tokens, const DenseKvCache& kv, int64_t kv_offset = 0);

  // Parts of one (chunk, layer) as a selective load gathers them: [C, heads, d]
  // on the host or the GPU tier's device; undefined until fetched.
  struct Parts {
    at::Tensor k, v, probe;
  };
  // Makes `parts` (bits of ChunkPart) present for every chunk: a cached chunk
  // gives keys and values (and probe keys as a slice of its keys), a missing
  // one is read from disk, only the parts asked for. A chunk whose keys and
  // values have both come from disk is then cached.
  Status Fetch(const std::vector<uint64_t>& chunks, int layer, uint8_t parts, std::vector<Parts>* out,
               LoadStats* stats);
  const ChunkGeometry& geometry() const { return geo_; }
  // Chunk parts [C, heads, d] in token order -> [heads, n*C, d] on the
  // model's device and in its dtype.
  at::Tensor StackChunks(const std::vector<at::Tensor>& parts) const;

  RadixTree& tree() { return tree_; }
  TieredCache& cache() { return *cache_; }
  ChunkStore& disk() { return *disk_; }
  const PrefixStoreOptions& options() const { return opt_; }
  // Bytes one (chunk, layer) takes in the caches: keys + values.
  int64_t chunk_kv_bytes() const;
  static uint64_t CacheKey(uint64_t chunk, int layer) { return (chunk << 12) | static_cast<uint64_t>(layer); }

 private:
  PrefixStore(const Model& model, const PrefixStoreOptions& opt);

  const Model& model_;
  PrefixStoreOptions opt_;
  ChunkGeometry geo_;
  at::ScalarType kv_type_;
  RadixTree tree_;
  std::unique_ptr<ChunkStore> disk_;
  std::unique_ptr<TieredCache> cache_;
};

// A store fingerprint: architecture, shapes, a checksum of the first MiB of
// the weights, KV dtype and chunk size. A store opened with another is refused.
std::string StoreFingerprint(const Model& model, const std::string& kv_dtype, int chunk_tokens);

}  // namespace impress
