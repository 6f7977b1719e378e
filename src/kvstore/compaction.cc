#include "kvstore/compaction.h"

#include "kvstore/store_log.h"

namespace impress {

Status FreeUnreachable(const RadixTree& tree, ChunkStore* disk, CompactStats* stats) {
  const std::set<uint64_t> live = LiveChunks(tree);
  stats->allocated_before = disk->AllocatedBytes();
  std::vector<uint64_t> dead;
  for (uint64_t id : disk->ChunkIds()) {
    if (live.count(id)) ++stats->chunks_live;
    else dead.push_back(id);
  }
  stats->chunks_freed = dead.size();
  Status s = disk->Free(dead, &stats->freed);
  stats->allocated_after = disk->AllocatedBytes();
  return s;
}

StatusOr<CompactStats> CompactStore(ChunkStore* disk, const std::vector<std::string>& committed) {
  const ChunkGeometry& g = disk->geometry();
  RadixTree tree(g.chunk_tokens);
  for (const std::string& meta : committed)
    RETURN_IF_ERROR(ReplayRecord(meta, g.layers, &tree).WithContext(disk->dir() + "/log"));
  CompactStats stats;
  RETURN_IF_ERROR(FreeUnreachable(tree, disk, &stats));
  RETURN_IF_ERROR(disk->RewriteLog(&stats.log_before, &stats.log_after));
  return stats;
}

}  // namespace impress
