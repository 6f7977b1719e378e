// CRC-32C (Castagnoli), the checksum of every stored chunk part and log record.
#pragma once

#include <cstddef>
#include <cstdint>

namespace impress {

// CRC-32C of data[0, n), continuing from `crc` (0 to start).
// The SSE4.2 instruction where the CPU has it, else Crc32cPortable.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
// The same by table lookups (slicing by 8), on any CPU.
uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc = 0);

}  // namespace impress
