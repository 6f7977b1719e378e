#include "store/chunk_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/named.h"
#include "common/crc32c.h"
#include "store/manifest.h"

namespace impress {
namespace {

constexpr size_t kAlign = kDirectAlign;
size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Status ChunkStore::RefuseOrphanedData() {
  std::string found;
  for (const char* name : {"log", "chunks.dat"}) {
    const std::string path = dir_ + "/" + name;
    if (!env_->Exists(path)) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, env_->Open(path, OpenMode::kRead));
    ASSIGN_OR_RETURN(const uint64_t bytes, f->Size());
    if (bytes > 0) found += (found.empty() ? "" : " and ") + std::string(name) + " (" + std::to_string(bytes) + " bytes)";
  }
  if (found.empty()) return Status::OK();
  return Status::InvalidArgument(dir_ + ": holds " + found +
                                 " but no MANIFEST, so nothing says how to read them; nothing was written (restore "
                                 "the MANIFEST, or move the folder aside to start a new store)");
}

Status ChunkStore::CreateOrCheckManifest() {
  const std::string manifest = dir_ + "/MANIFEST";
  if (!env_->Exists(manifest)) {
    if (!opt_.create_if_missing) return Status::NotFound(dir_ + ": no store here (MANIFEST missing)");
    RETURN_IF_ERROR(RefuseOrphanedData());
    RETURN_IF_ERROR(env_->CreateDirs(dir_));
    return WriteFileAtomically(env_, manifest, ManifestText({opt_.geometry, opt_.fingerprint}));
  }
  ASSIGN_OR_RETURN(const StoreIdentity have, ReadManifest(env_, dir_));
  if (have.fingerprint != opt_.fingerprint)
    return Status::InvalidArgument(manifest + ": store was written for '" + have.fingerprint + "', not '" +
                                   opt_.fingerprint + "'");
  // A store that keeps digests serves callers that do not ask for them; the reverse is refused.
  const std::optional<DigestCodec> have_digests = have.geometry.digests;
  if (have_digests && !opt_.geometry.digests) opt_.geometry.digests = have_digests;
  if (have_digests && *have_digests != *opt_.geometry.digests) {
    const std::string& kept = NameOf(DigestCodecNames(), *have_digests);
    return Status::InvalidArgument(dir_ + ": the store keeps " + kept + " chunk digests, not " +
                                   NameOf(DigestCodecNames(), *opt_.geometry.digests) + ": --digest-codec " + kept +
                                   ", or a new --store folder");
  }
  if (!have_digests && opt_.geometry.digests) {
    ChunkGeometry without = opt_.geometry;
    without.digests.reset();
    if (GeometryText(have.geometry) == GeometryText(without))
      return Status::InvalidArgument(dir_ + ": the store keeps no chunk digests (written before them, or for systems "
                                     "that need none); the digest system needs a store made with them: a new --store folder");
  }
  if (GeometryText(have.geometry) != GeometryText(opt_.geometry))
    return Status::InvalidArgument(manifest + ": store geometry " + GeometryText(have.geometry) + " differs from " +
                                   GeometryText(opt_.geometry));
  return Status::OK();
}

Status ChunkStore::OpenFiles() {
  const std::string data = dir_ + "/chunks.dat";
  ASSIGN_OR_RETURN(lock_, env_->Lock(dir_ + "/LOCK"));
  if (!env_->Exists(dir_ + "/log") && env_->Exists(data)) {  // a new store makes both at once
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, env_->Open(data, OpenMode::kRead));
    ASSIGN_OR_RETURN(const uint64_t bytes, f->Size());
    if (bytes > 0)
      return Status::InvalidArgument(dir_ + ": chunks.dat holds " + std::to_string(bytes) +
                                     " bytes but the log is missing, so no record says what they are; nothing was "
                                     "written (restore the log, or run `impress store repair` to start it afresh)");
  }
  const bool created = !env_->Exists(data) || !env_->Exists(dir_ + "/log");
  ASSIGN_OR_RETURN(data_, env_->Open(data, OpenMode::kReadWrite));
  ASSIGN_OR_RETURN(direct_, env_->Open(data, OpenMode::kDirectRead));
  ASSIGN_OR_RETURN(log_, env_->Open(dir_ + "/log", OpenMode::kReadWrite));
  // A synced file whose directory entry is not durable can vanish in a power
  // cut, committed records and all: new files' entries are synced first.
  if (created) RETURN_IF_ERROR(env_->SyncDir(dir_));
  return Status::OK();
}

// Replays the log up to the first record that is torn or fails its checksum.
// Only a crash mid-append makes one, so it must be the last: a whole record
// after it means the log itself is damaged, and cutting it there would lose
// committed records.
Status ChunkStore::ReplayLog(std::vector<std::string>* committed) {
  const std::string log = log_->path();
  ASSIGN_OR_RETURN(const std::string bytes, ReadLog());
  std::vector<LogEntry> entries;
  size_t pos = 0;
  // A whole record with a good checksum that does not say what a commit or a
  // free says was written by something else or by a bug: the store is damaged.
  if (Status s = ReadLogEntries(bytes, opt_.geometry, &entries, &pos); !s.ok())
    return Status::Corruption(log + ": " + s.message() + ": the store is damaged; nothing was changed");
  // Extents of the last free record: a crash between it and its holes can
  // only have left that one's space allocated.
  std::vector<std::pair<uint64_t, uint64_t>> unpunched;
  for (LogEntry& e : entries) {
    if (e.free) {  // Free's record: forget the chunks
      unpunched.clear();
      EraseLocked(e.freed, &unpunched);
      continue;
    }
    for (const StoredChunk& c : e.chunks) index_[{c.id, c.layer}] = c.loc;
    if (committed != nullptr) committed->push_back(std::move(e.meta));
  }
  // Commits append past the end, so no two stored chunks share bytes; if they
  // did, freeing one would punch the other.
  std::vector<std::pair<uint64_t, uint64_t>> extents;  // (offset, record bytes)
  extents.reserve(index_.size());
  for (const auto& [key, loc] : index_) extents.push_back({loc.offset, opt_.geometry.RecordBytes(loc.codec)});
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i)
    if (extents[i].first - extents[i - 1].first < extents[i - 1].second)
      return Status::Corruption(log + ": two stored chunks overlap at byte " + std::to_string(extents[i].first) +
                                " of chunks.dat: the store is damaged; nothing was changed");
  const uint64_t data_end = extents.empty() ? 0 : extents.back().first + extents.back().second;
  if (const size_t q = NextWholeRecord(bytes, pos); q != std::string::npos)
    return Status::Corruption(log + ": the record at byte " + std::to_string(pos) +
                              " is corrupt and whole records follow it (byte " + std::to_string(q) +
                              "): the store is damaged; nothing was changed");
  if (pos < bytes.size()) RETURN_IF_ERROR(log_->Truncate(pos).WithContext("cutting off a torn tail"));
  // Punching again is harmless, and where it fails only space is wasted.
  (void)PunchHoles(std::move(unpunched));
  // New parts go after everything on disk, committed or not.
  ASSIGN_OR_RETURN(const uint64_t data_size, data_->Size());
  data_end_ = RoundUp(std::max<uint64_t>(data_end, data_size));
  return Status::OK();
}

StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::Open(const std::string& dir, const StoreOptions& opt,
                                                        std::vector<std::string>* committed) {
  RETURN_IF_ERROR(CheckGeometry(dir, opt.geometry));
  std::unique_ptr<ChunkStore> s(new ChunkStore());
  s->dir_ = dir;
  s->opt_ = opt;
  s->env_ = opt.env != nullptr ? opt.env : Env::Default();
  RETURN_IF_ERROR(s->CreateOrCheckManifest());
  RETURN_IF_ERROR(s->OpenFiles());
  RETURN_IF_ERROR(s->ReplayLog(committed));
  s->io_ = std::make_unique<ThreadPool>(std::max(1, opt.io_threads));
  RETURN_IF_ERROR(s->LoadDigests());
  return s;
}

StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::OpenExisting(const std::string& dir,
                                                                std::vector<std::string>* committed) {
  StoreOptions opt;
  opt.env = Env::Default();
  ASSIGN_OR_RETURN(const StoreIdentity id, ReadManifest(opt.env, dir));
  opt.geometry = id.geometry;
  opt.fingerprint = id.fingerprint;
  opt.create_if_missing = false;
  return Open(dir, opt, committed);
}

ChunkStore::~ChunkStore() { io_.reset(); }  // reads finish before the files close

Status ChunkStore::Commit(const std::vector<EncodedChunk>& writes, const std::string& meta) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return CommitLocked(writes, meta, /*replace=*/false, nullptr);
}

Status ChunkStore::Replace(const std::vector<EncodedChunk>& writes, const std::string& meta, FreeStats* stats) {
  std::vector<std::pair<uint64_t, uint64_t>> displaced;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    RETURN_IF_ERROR(CommitLocked(writes, meta, /*replace=*/true, &displaced));
  }
  return GiveBack(std::move(displaced), stats);
}

Status ChunkStore::CommitLocked(const std::vector<EncodedChunk>& writes, const std::string& meta, bool replace,
                                std::vector<std::pair<uint64_t, uint64_t>>* displaced) {
  const ChunkGeometry& g = opt_.geometry;
  std::vector<uint8_t> buf;
  std::vector<StoredChunk> added;
  uint64_t off = data_end_;
  if (!replace) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& w : writes) IMPRESS_CHECK(!index_.count({w.chunk_id, w.layer}));
  }
  // The parts, their sync and the log record go to disk with only the
  // writers' lock held: reads go on. Nothing indexes the new parts until the
  // record is durable.
  for (const auto& w : writes) {
    ChunkLocation loc{off, {0, 0, 0, 0}, w.codec};
    buf.assign(g.RecordBytes(loc.codec), 0);
    size_t at = 0;
    for (int part = 0; part < kChunkParts; ++part) {
      const size_t n = g.PartBytes(part, loc.codec);
      if (n == 0) continue;
      const at::Tensor& bytes = part == 3 ? w.digest : w.bytes[part];
      IMPRESS_CHECK(bytes.is_contiguous() && bytes.device().is_cpu() && bytes.nbytes() == n);
      std::memcpy(buf.data() + at, bytes.data_ptr(), n);
      loc.crc[part] = Crc32c(bytes.data_ptr(), n);
      at += g.PartStride(part, loc.codec);
    }
    RETURN_IF_ERROR(data_->Write(off, buf.data(), buf.size()));
    added.push_back({w.chunk_id, w.layer, loc});
    off += buf.size();
    counters_.bytes_written += buf.size();
  }
  RETURN_IF_ERROR(data_->Sync());
  RETURN_IF_ERROR(AppendLog(CommitPayload(meta, added, g)));
  std::lock_guard<std::mutex> lock(mu_);
  if (g.digests)
    for (const EncodedChunk& w : writes) digests_[{w.chunk_id, w.layer}] = w.digest;
  for (const StoredChunk& c : added) {
    auto [it, fresh] = index_.insert({{c.id, c.layer}, c.loc});
    if (!fresh) {
      displaced->push_back({it->second.offset, g.RecordBytes(it->second.codec)});
      it->second = c.loc;
    }
    damaged_.erase(c.id);
  }
  data_end_ = off;
  return Status::OK();
}

Status ChunkStore::AppendLog(const std::string& payload) {
  const std::string rec = LogRecord(payload);
  ASSIGN_OR_RETURN(const uint64_t size, log_->Size());
  Status w = log_->Write(size, rec.data(), rec.size());
  if (w.ok()) w = log_->Sync();
  if (!w.ok()) (void)log_->Truncate(size);  // leave no partial record behind: a later commit must not follow garbage
  return w;
}

void ChunkStore::EraseLocked(const std::vector<uint64_t>& ids, std::vector<std::pair<uint64_t, uint64_t>>* extents) {
  for (uint64_t id : ids) {  // an id's layers are adjacent in the index
    damaged_.erase(id);
    digests_.erase(digests_.lower_bound({id, 0}), digests_.lower_bound({id + 1, 0}));
    for (auto it = index_.lower_bound({id, 0}); it != index_.end() && it->first.first == id;) {
      extents->push_back({it->second.offset, opt_.geometry.RecordBytes(it->second.codec)});
      it = index_.erase(it);
    }
  }
}

Status ChunkStore::PunchHoles(std::vector<std::pair<uint64_t, uint64_t>> extents) {
  std::sort(extents.begin(), extents.end());
  for (size_t i = 0; i < extents.size();) {
    uint64_t start = extents[i].first, end = start + extents[i].second;
    for (++i; i < extents.size() && extents[i].first <= end; ++i) end = std::max(end, extents[i].first + extents[i].second);
    RETURN_IF_ERROR(data_->PunchHole(start, end - start).WithContext("freed chunks keep their space"));
  }
  return Status::OK();
}

Status ChunkStore::Free(const std::vector<uint64_t>& chunk_ids, FreeStats* stats) {
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  {
    std::lock_guard<std::mutex> writer(write_mu_);
    std::vector<uint64_t> stored;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint64_t id : std::set<uint64_t>(chunk_ids.begin(), chunk_ids.end())) {
        auto it = index_.lower_bound({id, 0});
        if (it != index_.end() && it->first.first == id) stored.push_back(id);
      }
    }
    if (stored.empty()) return Status::OK();
    RETURN_IF_ERROR(AppendLog(FreePayload(stored)));  // the writers' lock keeps these ids stored meanwhile
    std::lock_guard<std::mutex> lock(mu_);
    EraseLocked(stored, &extents);
  }
  return GiveBack(std::move(extents), stats);
}

Status ChunkStore::GiveBack(std::vector<std::pair<uint64_t, uint64_t>> extents, FreeStats* stats) {
  if (stats != nullptr) {
    stats->chunk_layers += extents.size();
    for (const auto& e : extents) stats->bytes += e.second;
  }
  return PunchHoles(std::move(extents));
}

StatusOr<std::string> ChunkStore::ReadLog() const {
  ASSIGN_OR_RETURN(const uint64_t n, log_->Size());
  std::string bytes(static_cast<size_t>(n), '\0');
  if (n > 0) RETURN_IF_ERROR(log_->Read(0, bytes.size(), bytes.data()));
  return bytes;
}

Status ChunkStore::RewriteLog(uint64_t* bytes_before, uint64_t* bytes_after) {
  std::lock_guard<std::mutex> writer(write_mu_);
  const std::string log = dir_ + "/log", tmp = dir_ + "/log.tmp";
  ASSIGN_OR_RETURN(const std::string bytes, ReadLog());
  // A commit record stays if any of its chunks is still indexed. Free's records
  // go, unless a kept record also names freed chunks (then replaying them
  // must still forget those). Open cut any torn tail, so every record is whole.
  std::vector<LogEntry> entries;
  size_t end = 0;
  RETURN_IF_ERROR(ReadLogEntries(bytes, opt_.geometry, &entries, &end).WithContext(log));
  std::vector<bool> keep(entries.size(), true);
  bool partial = false;
  std::unique_lock<std::mutex> lock(mu_);  // the index, read; writers are held off by write_mu_
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogEntry& e = entries[i];
    if (e.free || e.chunks.empty()) continue;
    size_t live = 0;
    for (const StoredChunk& c : e.chunks) live += index_.count({c.id, c.layer});
    keep[i] = live > 0;
    partial = partial || (live > 0 && live < e.chunks.size());
  }
  lock.unlock();
  std::string kept;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].free ? partial : keep[i]) kept.append(bytes, entries[i].pos, entries[i].len);
  // The new file becomes the log: once the rename is done there is no second
  // open that could fail and leave appends going to the replaced file.
  StatusOr<std::unique_ptr<File>> fresh = env_->Open(tmp, OpenMode::kCreate);
  if (!fresh.ok()) return fresh.status();
  Status w = (*fresh)->Write(0, kept.data(), kept.size());
  if (w.ok()) w = (*fresh)->Sync();
  if (w.ok()) w = env_->Rename(tmp, log);
  if (!w.ok()) {
    (void)env_->Remove(tmp);
    return w;  // the old log is untouched
  }
  (void)env_->SyncDir(dir_);  // the rename itself
  std::lock_guard<std::mutex> swap(mu_);
  log_ = *std::move(fresh);
  if (bytes_before) *bytes_before = bytes.size();
  if (bytes_after) *bytes_after = kept.size();
  return Status::OK();
}

std::vector<uint64_t> ChunkStore::ChunkIds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> ids;
  for (const auto& [key, loc] : index_)
    if (ids.empty() || ids.back() != key.first) ids.push_back(key.first);
  return ids;
}

uint64_t ChunkStore::AllocatedBytes() const { return data_->AllocatedBytes(); }

uint64_t ChunkStore::LogBytes() const {
  std::lock_guard<std::mutex> lock(mu_);  // RewriteLog replaces log_
  StatusOr<uint64_t> n = log_->Size();
  return n.ok() ? *n : 0;
}

bool ChunkStore::Has(uint64_t chunk_id, int layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count({chunk_id, layer}) > 0;
}

std::vector<uint64_t> ChunkStore::Damaged(const std::vector<uint64_t>& chunk_ids) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> out;
  for (uint64_t id : chunk_ids)
    if (damaged_.count(id)) out.push_back(id);
  return out;
}

void ChunkStore::ForgetDamaged(const std::vector<uint64_t>& chunk_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t id : chunk_ids) damaged_.erase(id);
}

size_t ChunkStore::chunk_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

Status ChunkStore::ReadOne(ChunkRead* read) {
  ChunkRead& r = *read;
  ChunkLocation loc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find({r.chunk_id, r.layer});
    if (it == index_.end())
      return Status::NotFound(dir_ + ": chunk " + std::to_string(r.chunk_id) + " layer " + std::to_string(r.layer) +
                           " is not stored");
    loc = it->second;
  }
  void* const dst[kChunkParts] = {r.keys, r.values, r.probe, r.digest};
  StatusOr<size_t> bytes = ReadChunkParts(direct_.get(), opt_.geometry, loc, r.parts, dst,
                                          dir_ + "/chunks.dat: chunk " + std::to_string(r.chunk_id) + " layer " +
                                              std::to_string(r.layer));
  if (!bytes.ok()) {
    if (bytes.status().IsCorruption()) {
      std::lock_guard<std::mutex> lock(mu_);
      damaged_.insert(r.chunk_id);
    }
    return bytes.status();
  }
  counters_.bytes_read += *bytes;
  counters_.parts_read += __builtin_popcount(r.parts & (kKeys | kValues | kProbeKeys));
  r.codec = loc.codec;
  return Status::OK();
}

Status ChunkStore::Read(std::vector<ChunkRead>* reads) {
  if (reads->size() == 1) return ReadOne(&(*reads)[0]);
  std::vector<Status> results(reads->size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < reads->size(); ++i) tasks.push_back([&, i] { results[i] = ReadOne(&(*reads)[i]); });
  io_->RunAll(std::move(tasks));
  for (auto& s : results) RETURN_IF_ERROR(s);
  return Status::OK();
}

Status ChunkStore::VerifyEach(uint64_t* chunks_checked, std::vector<DamagedChunk>* damaged) {
  std::vector<std::pair<uint64_t, int>> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : index_) keys.push_back(k);
  }
  const ChunkGeometry& g = opt_.geometry;
  std::vector<uint8_t> k(g.MaxPartBytes(0)), v(g.MaxPartBytes(1)), p(g.MaxPartBytes(2)), d(g.DigestBytes());
  const uint8_t every = kKeys | kValues | kProbeKeys | (g.digests ? kDigest : 0);
  for (const auto& [id, layer] : keys) {
    ChunkRead r{id, layer, every, k.data(), v.data(), p.data(), d.data()};
    const Status s = ReadOne(&r);
    if (s.IsCorruption()) damaged->push_back({id, layer, s.message()});
    else if (!s.ok()) return s;
    if (chunks_checked) ++*chunks_checked;
  }
  return Status::OK();
}

Status ChunkStore::Verify(uint64_t* chunks_checked) {
  std::vector<DamagedChunk> damaged;
  RETURN_IF_ERROR(VerifyEach(chunks_checked, &damaged));
  return damaged.empty() ? Status::OK() : Status::Corruption(damaged.front().why);
}

}  // namespace impress
