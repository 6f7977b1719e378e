// Repair of a damaged chunk store (docs/store.md, "Repair"), in the spirit of
// LevelDB's RepairDB: keep every log record that is whole and every chunk
// whose checksums hold, drop the rest, and rewrite the log (and the MANIFEST,
// when it is missing or wrong) atomically.
//
// What stays is a store that opens and verifies cleanly and serves nothing
// it should not: a stored prefix that lost a chunk loses it and every chunk
// after it (its records are cut there), so what remains of it is a valid
// prefix; a record whose prefix runs through a lost one is dropped; a
// reordered copy with a damaged chunk is dropped (requests read the node's
// own chunks). A store with nothing damaged is left as it is, byte for byte.
//
// Crash-safe: the MANIFEST (when it changes) and then the log are each
// replaced atomically, and the dropped chunks' space is given back only
// after the new log is in place, so a repair killed at any point and run
// again keeps the same chunks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/env.h"
#include "store/manifest.h"

namespace impress {

struct RepairOptions {
  std::string dir;
  // How the store was written (from a model: StoreIdentityFor), in place of
  // its MANIFEST; unset: the MANIFEST's, which must then be readable.
  std::optional<StoreIdentity> identity;
  Env* env = nullptr;  // Env::Default() when null
};

struct RepairReport {
  bool changed = false;           // false: nothing was damaged, and nothing was written
  bool manifest_written = false;  // it was missing, unreadable, or not `identity`
  int64_t records = 0;            // whole, well-formed log records
  int64_t records_kept = 0;       // records in the new log
  int64_t records_malformed = 0;  // whole records that are neither a commit nor a free
  uint64_t log_bytes_skipped = 0; // log bytes in no whole record (damaged or torn)
  int64_t chunk_layers_checked = 0;
  int64_t chunk_layers_damaged = 0;  // failing a checksum, past the end of chunks.dat, or sharing bytes
  int64_t chunks_intact = 0;         // chunk ids all of whose layers are stored and hold their checksums
  int64_t chunks_kept = 0;           // of those, the ones the new log keeps
  int64_t chunks_behind_damage = 0;  // intact, dropped: after a lost chunk in their prefix
  int64_t chunks_unreachable = 0;    // intact, dropped: no prefix reads them (replaced copies)
  int64_t prefixes_cut = 0;          // stored prefixes cut short or dropped for a lost chunk
  int64_t copies_dropped = 0;        // reordered copies dropped for a lost chunk
  uint64_t bytes_freed = 0;          // chunks.dat space given back (dropped chunks)
  std::vector<uint64_t> kept_ids;    // the kept chunk ids, ascending
  std::string first_damage;          // what was found first, in one line ("" when nothing)
};

// Repairs the store in opt.dir (which no other process may have open: the
// store's lock is taken). Errors: the store is in use; no MANIFEST and no
// `identity`; not one stored chunk holds its checksums under the geometry at
// hand though some fail them (the MANIFEST or `identity` is not the one the
// store was written with: nothing is changed); I/O failures.
StatusOr<RepairReport> RepairStore(const RepairOptions& opt);

}  // namespace impress
