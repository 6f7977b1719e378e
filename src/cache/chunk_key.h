// A (chunk, layer) as the caches and their placement policies key it: one
// 64-bit word, the chunk id above kLayerBits bits of layer. The only place
// the word is packed or unpacked.
#pragma once

#include <cstdint>

namespace impress {

struct ChunkKey {
  static constexpr int kLayerBits = 12;
  static constexpr int kMaxLayers = 1 << kLayerBits;
  uint64_t chunk = 0;
  int layer = 0;

  // REQUIRES: 0 <= layer < kMaxLayers (a store refuses a model with more) and
  // chunk < 2^52 (ids are counted from 0).
  uint64_t packed() const {
    return (chunk << kLayerBits) | static_cast<uint64_t>(layer);
  }
  static ChunkKey Unpack(uint64_t key) {
    return {key >> kLayerBits, static_cast<int>(key & ((uint64_t{1} << kLayerBits) - 1))};
  }
};

}  // namespace impress
