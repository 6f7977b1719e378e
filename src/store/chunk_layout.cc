#include "store/chunk_layout.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/crc32c.h"

namespace impress {
namespace {

static_assert(kDirectAlign == kPartAlign, "a part is read alone with direct I/O");

// Aligned heap buffer for direct I/O.
struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t n) {
    if (posix_memalign(&p, kDirectAlign, std::max(n, kDirectAlign)) != 0) p = nullptr;
  }
  ~AlignedBuffer() { std::free(p); }
};

// One aligned buffer per reading thread, grown as needed; null when out of memory.
void* ThreadBuffer(size_t len) {
  thread_local std::unique_ptr<AlignedBuffer> tls;
  thread_local size_t tls_size = 0;
  if (tls_size < len) {
    tls = std::make_unique<AlignedBuffer>(len);
    tls_size = tls->p ? len : 0;
  }
  return tls_size < len ? nullptr : tls->p;
}

}  // namespace


StatusOr<size_t> ReadChunkParts(File* file, const ChunkGeometry& g, const ChunkLocation& loc, uint8_t parts,
                                void* const dst[kChunkParts], const std::string& what) {
  size_t sizes[kChunkParts];
  for (int p = 0; p < kChunkParts; ++p) sizes[p] = g.PartBytes(p, loc.codec);
  size_t bytes = 0;
  int part = 0;
  while (part < kChunkParts) {
    if (!(parts & (1 << part)) || sizes[part] == 0) {
      ++part;
      continue;
    }
    int last = part;
    while (last + 1 < kChunkParts && (parts & (1 << (last + 1))) && sizes[last + 1] > 0) ++last;
    uint64_t start = loc.offset;
    for (int p = 0; p < part; ++p) start += g.PartStride(p, loc.codec);
    size_t len = 0;
    for (int p = part; p <= last; ++p) len += g.PartStride(p, loc.codec);
    void* buf = ThreadBuffer(len);
    if (buf == nullptr) return Status::IOError("out of memory for a direct read");
    const Status read = file->Read(start, len, buf);
    if (!read.ok()) {
      // A part past the end of the file is damage to the chunk (the file was
      // cut short), as a checksum mismatch is; any other failure is the device's.
      auto size = file->Size();
      if (size.ok() && start + len > *size)
        return Status::Corruption(what + " lies past the end of the file (" + std::to_string(*size) +
                                  " bytes): the file was cut short");
      return read;
    }
    bytes += len;
    size_t at = 0;
    for (int p = part; p <= last; ++p) {
      const auto* src = static_cast<const uint8_t*>(buf) + at;
      if (Crc32c(src, sizes[p]) != loc.crc[p])
        return Status::Corruption(what + " part " + std::to_string(p) + " fails its checksum");
      std::memcpy(dst[p], src, sizes[p]);
      at += g.PartStride(p, loc.codec);
    }
    part = last + 1;
  }
  return bytes;
}

}  // namespace impress
