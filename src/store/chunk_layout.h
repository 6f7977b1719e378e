// How a (chunk, layer) lies in chunks.dat (docs/store.md, "On disk"): its
// parts (codec/chunk_geometry.h) at an offset, and the checksums that say
// whether they are intact. One implementation of
// the read-and-check for the store's reads, its verify and repair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/chunk_geometry.h"
#include "codec/kv_codec.h"
#include "common/status.h"
#include "store/env.h"

namespace impress {

// Where one (chunk, layer) lives and what it should hash to.
struct ChunkLocation {
  uint64_t offset = 0;  // of the keys part in chunks.dat
  uint32_t crc[kChunkParts] = {0, 0, 0, 0};  // keys, values, probe keys, digest (0 when none)
  KvCodec codec = KvCodec::kNone;  // how its parts are stored
};

// Reads the `parts` (ChunkPart bits) of the (chunk, layer) at `loc` from
// `file` (opened for direct reads) into dst[0..3] (keys, values, probe keys, digest;
// PartBytes(part, loc.codec) each, any alignment; only the asked ones are
// written), checking each part's checksum. Adjacent parts are read with one
// request. Returns the bytes read. Errors: Corruption for damage to the
// chunk (a part that fails its checksum, or that lies past the end of the
// file), naming `what` ("DIR/chunks.dat: chunk N layer L"); any other read
// failure is the device's and returned as it is.
StatusOr<size_t> ReadChunkParts(File* file, const ChunkGeometry& g, const ChunkLocation& loc, uint8_t parts,
                                void* const dst[kChunkParts], const std::string& what);

}  // namespace impress
