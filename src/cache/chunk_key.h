// A (chunk, layer) as the caches and their placement policies key it: one
// 64-bit word, the chunk id above kLayerBits bits of layer. The only place
// the word is packed or unpacked.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace impress {

struct ChunkKey {
  static constexpr int kLayerBits = 12;
  uint64_t chunk = 0;
  int layer = 0;

  uint64_t packed() const {
    IMPRESS_CHECK(layer >= 0 && layer < (1 << kLayerBits) && chunk < (uint64_t{1} << (64 - kLayerBits)));
    return (chunk << kLayerBits) | static_cast<uint64_t>(layer);
  }
  static ChunkKey Unpack(uint64_t key) {
    return {key >> kLayerBits, static_cast<int>(key & ((uint64_t{1} << kLayerBits) - 1))};
  }
};

}  // namespace impress
