// The chunk store's log (docs/store.md, "On disk"): framed records
// [u32 magic][u32 length][u32 CRC-32C of the payload][JSON payload], and
// what a commit or a free record says. Opening reads it strictly (up to the
// first record that is not whole); repair salvages every whole record
// wherever it starts. Both parse a payload with ParseLogEntry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/chunk_layout.h"

namespace impress {

struct StoredChunk {
  uint64_t id = 0;
  int layer = 0;
  ChunkLocation loc;
};

// One whole record of the log: a commit (meta and the chunks it stored) or
// a free (the chunk ids it forgets).
struct LogEntry {
  size_t pos = 0, len = 0;  // where the framed record lies in the log
  bool free = false;
  std::vector<uint64_t> freed;      // a free record's ids
  std::string meta;                 // a commit record's metadata
  std::vector<StoredChunk> chunks;  // a commit record's chunks
};

// `payload` framed as one record.
std::string LogRecord(const std::string& payload);
// The payloads of a commit (the caller's `meta` and the chunks it stores) and of a free.
// A chunk stored with another codec than the store's (g.codec) says so; a
// chunk has four checksums where the store keeps digests (g.digests), else three.
std::string CommitPayload(const std::string& meta, const std::vector<StoredChunk>& chunks, const ChunkGeometry& g);
std::string FreePayload(const std::vector<uint64_t>& ids);

// Reads records from the start of `log` up to the first that is not whole
// (short, another magic, a failing checksum) or whose payload is not a JSON
// object, and sets *end to where that one starts (the log's size when every
// record is whole). Error: a whole record that does not say what a commit or
// a free says (for a store of `layers` layers), as Corruption "the record at
// byte N is malformed (why)". A chunk without a codec of its own has `g`'s.
Status ReadLogEntries(const std::string& log, const ChunkGeometry& g, std::vector<LogEntry>* entries, size_t* end);

// Where the first whole record starting after byte `from` starts; npos when none does.
size_t NextWholeRecord(const std::string& log, size_t from);

// Every whole, well-formed record of `log`, wherever it starts: the bytes
// between them (a damaged record, a torn tail) are skipped and counted.
struct SalvagedLog {
  std::vector<LogEntry> entries;
  uint64_t bytes_skipped = 0;   // bytes in no whole record
  int64_t damaged_runs = 0;     // stretches of such bytes
  int64_t malformed = 0;        // whole records that are not a commit or a free
};
SalvagedLog SalvageLog(const std::string& log, const ChunkGeometry& g);

}  // namespace impress
