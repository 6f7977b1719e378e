// The disk tier: every chunk of every stored prefix, durable and checksummed.
//
// A chunk is C tokens of one radix node in one layer. It is stored as up to
// three parts, each padded to 4 KiB so that it can be read alone with direct
// I/O: keys [C][kv_heads][head_dim], values (same shape), and the probe keys
// [C][probe_kv_heads][head_dim] (the keys of the KV heads the probe query heads
// use, stored a second time so identification reads only them).
//
// Files in the store directory (docs/store.md):
//   MANIFEST    one JSON line: format version, geometry, fingerprint
//   chunks.dat  chunk parts, appended
//   log         commit records: [magic][length][crc32c][JSON payload]
// Commit writes the parts, syncs them, then appends and syncs one log record
// naming their offsets and checksums; a record is the unit of durability. On
// open, a torn or corrupt log tail is cut off, so a crash never exposes a
// chunk whose record did not land. Reads bypass the page cache (O_DIRECT) and
// verify each part's checksum: a corrupt part is an error, never data.
// Free gives chunks' space back to the file system (a log record, then holes
// punched where their parts were); RewriteLog drops the records nothing needs
// any more. One process at a time: Open locks the file LOCK. Every file
// operation goes through StoreOptions::env (store/env.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codec/encoded_chunk.h"
#include "common/status.h"
#include "common/thread_pool.h"
#include "store/chunk_layout.h"
#include "store/env.h"
#include "store/log_format.h"

namespace impress {

struct StoreOptions {
  ChunkGeometry geometry;
  std::string fingerprint;     // model + dtype + chunk size; opening with another is an error
  bool create_if_missing = true;
  int io_threads = 8;          // parallel direct reads
  Env* env = nullptr;          // the file operations (Env::Default() when null); must outlive the store
};

struct ChunkRead {
  uint64_t chunk_id;
  int layer;
  uint8_t parts;       // ChunkPart bits
  void* keys = nullptr;    // room for MaxPartBytes(part) each, when the part is asked for
  void* values = nullptr;
  void* probe = nullptr;
  void* digest = nullptr;  // room for geometry().DigestBytes(), when kDigest is asked for
  KvCodec codec = KvCodec::kNone;  // out: how the parts read are encoded
};

struct FreeStats {
  uint64_t chunk_layers = 0;  // (chunk, layer) records freed
  uint64_t bytes = 0;         // their parts, padding included
};

struct StoreCounters {
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> parts_read{0};
  std::atomic<uint64_t> bytes_written{0};
};

// A (chunk, layer) that fails its checks, and why.
struct DamagedChunk {
  uint64_t chunk_id = 0;
  int layer = 0;
  std::string why;  // Corruption's message
};

class ChunkStore {
 public:
  // Opens or creates the store in `dir`. Errors: another fingerprint or
  // geometry (a store that keeps digests opens for a caller that does not
  // ask for them, with its geometry's), an unreadable manifest, I/O failures
  // or a damaged digest (a store that keeps digests reads them all here). `committed` receives the
  // metadata of every committed record, in order, for the caller to replay.
  static StatusOr<std::unique_ptr<ChunkStore>> Open(const std::string& dir, const StoreOptions& opt,
                                                     std::vector<std::string>* committed);
  // Opens an existing store with the geometry and fingerprint its manifest
  // records (for inspection: stats, verify), through Env::Default().
  static StatusOr<std::unique_ptr<ChunkStore>> OpenExisting(const std::string& dir, std::vector<std::string>* committed);
  ~ChunkStore();

  // Durably stores `writes` (each one's `bytes` with its `codec`; `decoded`
  // is not read) and `meta` as one record. All or nothing: after a crash the
  // record is either whole or absent. REQUIRES: no chunk is stored twice.
  Status Commit(const std::vector<EncodedChunk>& writes, const std::string& meta);
  // Durably stores new parts for (chunk, layer)s that may be stored already
  // (healing damaged ones), as one record like Commit's, then punches holes
  // where their old parts were: replaying the log takes the newest location.
  // A crash between the record and the holes leaves the old parts allocated
  // and unnamed. `stats` counts the old parts given back.
  Status Replace(const std::vector<EncodedChunk>& writes, const std::string& meta, FreeStats* stats);
  // Reads the asked parts of every request in parallel, verifying checksums.
  // REQUIRES: buffers of the right size; any alignment.
  Status Read(std::vector<ChunkRead>* reads);
  bool Has(uint64_t chunk_id, int layer) const;
  // Which of `chunk_ids` had a part fail its checksum (or lie past the end of
  // chunks.dat) on a read since it was last stored or forgotten here.
  std::vector<uint64_t> Damaged(const std::vector<uint64_t>& chunk_ids) const;
  void ForgetDamaged(const std::vector<uint64_t>& chunk_ids);
  // Reads every part of every chunk and checks it; the first problem is the error.
  Status Verify(uint64_t* chunks_checked);
  // Reads every part of every chunk and checks it, listing each (chunk,
  // layer) that is damaged in `damaged`. Errors: only the device's.
  Status VerifyEach(uint64_t* chunks_checked, std::vector<DamagedChunk>* damaged);
  // Forgets every layer of `chunk_ids` durably (a crash keeps either all of
  // them or none) and punches holes where their parts were. Ids not stored
  // are ignored. Errors: the log write, or a file system that cannot punch
  // holes (the chunks are then forgotten but their space stays allocated).
  // REQUIRES: nothing reads these chunks any more.
  Status Free(const std::vector<uint64_t>& chunk_ids, FreeStats* stats);
  // Rewrites the log without Free's records and without commit records all
  // of whose chunks were freed (atomically: a new file renamed over the old),
  // so reopening reads only what is stored. Returns the log's bytes before
  // and after.
  Status RewriteLog(uint64_t* bytes_before, uint64_t* bytes_after);
  // Distinct chunk ids stored, ascending.
  std::vector<uint64_t> ChunkIds() const;
  // Bytes chunks.dat occupies on the file system (holes excluded).
  uint64_t AllocatedBytes() const;
  // Size of the log file.
  uint64_t LogBytes() const;

  // The digest (codec/key_digest.h, uint8 on the host) of a stored (chunk,
  // layer), held in memory since it was stored or the store opened; undefined
  // where the store keeps no digests or has no such chunk.
  at::Tensor Digest(uint64_t chunk_id, int layer) const;
  // Bytes of the digests held.
  uint64_t digest_bytes() const;

  const ChunkGeometry& geometry() const { return opt_.geometry; }
  const std::string& fingerprint() const { return opt_.fingerprint; }
  const std::string& dir() const { return dir_; }
  size_t chunk_count() const;
  uint64_t data_bytes() const { return data_end_; }
  const StoreCounters& counters() const { return counters_; }

 private:
  ChunkStore() = default;
  // Open's steps, in order.
  Status CreateOrCheckManifest();  // a new store's MANIFEST, or an existing one that matches opt_
  // A folder with a log or chunk file that holds data but no MANIFEST is not
  // a store this can own: an error naming what is there.
  Status RefuseOrphanedData();
  // chunks.dat (twice: appends and direct reads), LOCK, log; a chunks.dat
  // that holds data beside no log is refused (nothing names its chunks).
  Status OpenFiles();
  // Rebuilds index_ from the log (cutting a torn tail) and places data_end_.
  Status ReplayLog(std::vector<std::string>* committed);
  // Reads every stored (chunk, layer)'s digest into digests_ (geometry.digests only).
  Status LoadDigests();
  Status ReadOne(ChunkRead* r);
  // Commit's and Replace's body: writes the parts past the end, syncs, logs
  // `meta` and indexes them, appending the extents they displace.
  // REQUIRES: write_mu_ held, mu_ not.
  Status CommitLocked(const std::vector<EncodedChunk>& writes, const std::string& meta, bool replace,
                      std::vector<std::pair<uint64_t, uint64_t>>* displaced);
  // The whole log file.
  StatusOr<std::string> ReadLog() const;
  // Appends one framed record to the log and syncs it; on failure the log is
  // as it was. REQUIRES: write_mu_ held (or the store not yet shared).
  Status AppendLog(const std::string& payload);
  // Removes every layer of `ids` from index_, appending their extents.
  // REQUIRES: mu_ held, or the store not yet shared (Open).
  void EraseLocked(const std::vector<uint64_t>& ids, std::vector<std::pair<uint64_t, uint64_t>>* extents);
  // Counts (chunk, layer) extents (offset, record bytes) that no index entry
  // names any more in `stats` (when given) and punches them; called with no
  // lock held: commits append past the end of the file, never into them.
  Status GiveBack(std::vector<std::pair<uint64_t, uint64_t>> extents, FreeStats* stats);
  // Deallocates the byte ranges (offset, length), merged where adjacent.
  Status PunchHoles(std::vector<std::pair<uint64_t, uint64_t>> extents);

  std::string dir_;
  StoreOptions opt_;
  Env* env_ = nullptr;
  std::unique_ptr<FileLock> lock_;  // the exclusive lock on DIR/LOCK; taken first, released last
  std::unique_ptr<File> data_;      // chunks.dat, for appends
  std::unique_ptr<File> direct_;    // chunks.dat, for direct reads
  std::unique_ptr<File> log_;
  std::atomic<uint64_t> data_end_{0};  // changed by writers only (write_mu_)
  // Writers (Commit, Replace, Free, RewriteLog) one at a time, with their
  // writes, syncs and log appends; taken before mu_. Reads never take it, so
  // no read waits on a writer's disk.
  std::mutex write_mu_;
  mutable std::mutex mu_;  // guards index_, damaged_ and the log_ pointer; held only briefly, never across I/O
  std::map<std::pair<uint64_t, int>, ChunkLocation> index_;
  std::set<uint64_t> damaged_;  // GUARDED_BY(mu_): chunk ids a read found damaged
  std::map<std::pair<uint64_t, int>, at::Tensor> digests_;  // GUARDED_BY(mu_): (chunk, layer) -> its digest
  std::unique_ptr<ThreadPool> io_;
  StoreCounters counters_;
};

}  // namespace impress
