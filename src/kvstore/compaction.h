// Compaction: gives back the disk space of chunks no request can read any
// more, the reordered copies that a later reorder replaced, that a split made
// stale, or that lost a race to install (docs/store.md, "Compaction").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/radix_tree.h"
#include "common/status.h"
#include "store/chunk_store.h"

namespace impress {

struct CompactStats {
  uint64_t chunks_live = 0;      // chunk ids kept
  uint64_t chunks_freed = 0;     // chunk ids freed
  FreeStats freed;               // their (chunk, layer) records and bytes
  uint64_t allocated_before = 0, allocated_after = 0;  // bytes chunks.dat occupies
  uint64_t log_before = 0, log_after = 0;              // bytes of the log
};

// Frees every chunk of `disk` that `tree` (rebuilt from disk's log) does not
// reach (LiveChunks). REQUIRES: no lease names such a chunk.
Status FreeUnreachable(const RadixTree& tree, ChunkStore* disk, CompactStats* stats);

// Replays `committed` (the records ChunkStore::Open handed back for `disk`)
// into a radix tree, frees every stored chunk it does not reach and rewrites
// the log without the records of freed chunks: after it, the store holds what
// a reopened PrefixStore reads, and nothing else.
// REQUIRES: `disk` is not in use by a PrefixStore (ChunkStore::Open locks the
// store against other processes).
StatusOr<CompactStats> CompactStore(ChunkStore* disk, const std::vector<std::string>& committed);

}  // namespace impress
