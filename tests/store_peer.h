// The parts of a PrefixStore a test inspects (its index, caches and local
// disk), which its public interface does not hand out.
#pragma once

#include "kvstore/prefix_store.h"

namespace impress {

class PrefixStoreTestPeer {
 public:
  static PrefixIndex& index(PrefixStore& s) { return s.index_; }
  static TieredCache& cache(PrefixStore& s) { return *s.cache_; }
  static ChunkStore& disk(PrefixStore& s) { return *s.disk_; }
};

}  // namespace impress
