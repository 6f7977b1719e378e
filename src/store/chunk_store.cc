#include "store/chunk_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_get.h"
#include "store/crc32c.h"

namespace impress {
namespace {

using nlohmann::json;

constexpr size_t kAlign = 4096;
constexpr uint32_t kRecordMagic = 0x4B564C47;  // "GLVK"
constexpr int kFormatVersion = 1;

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Aligned heap buffer for direct I/O.
struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t n) {
    if (posix_memalign(&p, kAlign, std::max(n, kAlign)) != 0) p = nullptr;
  }
  ~AlignedBuffer() { std::free(p); }
};

// A whole log record starts at `pos`: magic, a length that fits, a matching checksum.
bool RecordAt(const std::string& log, size_t pos) {
  if (pos + 12 > log.size()) return false;
  uint32_t magic, len, crc;
  std::memcpy(&magic, &log[pos], 4);
  std::memcpy(&len, &log[pos + 4], 4);
  std::memcpy(&crc, &log[pos + 8], 4);
  return magic == kRecordMagic && len <= log.size() - pos - 12 && Crc32c(&log[pos + 12], len) == crc;
}

// Calls visit(offset, length with header, payload) for each whole record from
// the start of `log`, stopping at the first that is not whole or not JSON;
// returns where that one starts (the end of the last whole record).
size_t ForEachRecord(const std::string& log, const std::function<void(size_t, size_t, const json&)>& visit) {
  size_t pos = 0;
  while (RecordAt(log, pos)) {
    uint32_t len;
    std::memcpy(&len, &log[pos + 4], 4);
    const json rec = json::parse(log.begin() + pos + 12, log.begin() + pos + 12 + len, nullptr, false);
    if (!rec.is_object()) break;
    visit(pos, 12 + size_t{len}, rec);
    pos += 12 + size_t{len};
  }
  return pos;
}

json GeometryJson(const ChunkGeometry& g) {
  return {{"chunk_tokens", g.chunk_tokens}, {"layers", g.layers}, {"kv_heads", g.kv_heads},
          {"head_dim", g.head_dim}, {"probe_kv_heads", g.probe_kv_heads}, {"elem_bytes", g.elem_bytes}};
}

}  // namespace

size_t ChunkStore::PartStride(int part) const {
  return RoundUp(part == 2 ? opt_.geometry.ProbeBytes() : opt_.geometry.KeyBytes());
}

Status ChunkStore::CheckGeometry(const std::string& dir, const ChunkGeometry& g) {
  if (g.chunk_tokens < 1 || g.chunk_tokens > (1 << 16) || g.layers < 1 || g.layers > 4096 || g.kv_heads < 1 ||
      g.kv_heads > 4096 || g.head_dim < 1 || g.head_dim > 65536 || g.probe_kv_heads < 1 ||
      g.probe_kv_heads > g.kv_heads || (g.elem_bytes != 1 && g.elem_bytes != 2 && g.elem_bytes != 4))
    return Status::Corruption(dir + "/MANIFEST: corrupt manifest: geometry " + GeometryJson(g).dump() + " is out of range");
  return Status::OK();
}

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
  json want = {{"format", kFormatVersion}, {"fingerprint", opt_.fingerprint}, {"geometry", GeometryJson(opt_.geometry)}};
  if (!env_->Exists(manifest)) {
    if (!opt_.create_if_missing) return Status::NotFound(dir_ + ": no store here (MANIFEST missing)");
    RETURN_IF_ERROR(RefuseOrphanedData());
    RETURN_IF_ERROR(env_->CreateDirs(dir_));
    return WriteFileAtomically(env_, manifest, want.dump() + "\n");
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(env_, manifest));
  int format;
  std::string fingerprint;
  json geometry;
  try {
    const json have = json::parse(text);
    if (!have.is_object()) throw std::invalid_argument("not a JSON object");
    format = have.value("format", 0);
    fingerprint = have.value("fingerprint", "");
    geometry = have.value("geometry", json());
  } catch (const std::exception& e) {
    return Status::Corruption(manifest + ": corrupt manifest: " + e.what());
  }
  if (format != kFormatVersion)
    return Status::InvalidArgument(manifest + ": store format " + std::to_string(format) + ", expected " +
                                   std::to_string(kFormatVersion));
  if (fingerprint != opt_.fingerprint)
    return Status::InvalidArgument(manifest + ": store was written for '" + fingerprint + "', not '" +
                                   opt_.fingerprint + "'");
  if (geometry != want["geometry"])
    return Status::InvalidArgument(manifest + ": store geometry " + geometry.dump() + " differs from " +
                                   want["geometry"].dump());
  return Status::OK();
}

Status ChunkStore::OpenFiles() {
  const std::string data = dir_ + "/chunks.dat";
  ASSIGN_OR_RETURN(lock_, env_->Lock(dir_ + "/LOCK"));
  ASSIGN_OR_RETURN(data_, env_->Open(data, OpenMode::kReadWrite));
  ASSIGN_OR_RETURN(direct_, env_->Open(data, OpenMode::kDirectRead));
  ASSIGN_OR_RETURN(log_, env_->Open(dir_ + "/log", OpenMode::kReadWrite));
  return Status::OK();
}

// Replays the log up to the first record that is torn or fails its checksum.
// Only a crash mid-append makes one, so it must be the last: a whole record
// after it means the log itself is damaged, and cutting it there would lose
// committed records.
Status ChunkStore::ReplayLog(std::vector<std::string>* committed) {
  const std::string log = log_->path();
  ASSIGN_OR_RETURN(const std::string bytes, ReadLog());
  // Extents of the last free record: a crash between it and its holes can
  // only have left that one's space allocated.
  std::vector<std::pair<uint64_t, uint64_t>> unpunched;
  // A whole record with a good checksum that does not say what a commit or a
  // free says was written by something else or by a bug: the store is damaged.
  Status malformed;
  const int layers = opt_.geometry.layers;
  const size_t pos = ForEachRecord(bytes, [&](size_t at, size_t, const json& rec) {
    if (!malformed.ok()) return;
    try {
      if (rec.contains("free")) {  // Free's record: forget the chunks
        unpunched.clear();
        EraseLocked(GetIntegers<uint64_t>(rec.at("free")), &unpunched);
        return;
      }
      for (const auto& c : rec.at("chunks")) {
        ChunkLocation loc;
        loc.offset = GetInteger<uint64_t>(c.at("off"));
        const json& crc = c.at("crc");
        if (crc.size() != 3) throw std::invalid_argument("a chunk has " + std::to_string(crc.size()) + " checksums, not 3");
        for (int i = 0; i < 3; ++i) loc.crc[i] = GetInteger<uint32_t>(crc.at(i));
        const int layer = GetInteger<int>(c.at("layer"));
        if (layer < 0 || layer >= layers) throw std::invalid_argument("layer " + std::to_string(layer) + " out of range");
        if (loc.offset % kAlign != 0 || loc.offset > (uint64_t{1} << 56))
          throw std::invalid_argument("chunk offset " + std::to_string(loc.offset) + " is not a 4 KiB boundary in range");
        index_[{GetInteger<uint64_t>(c.at("id")), layer}] = loc;
      }
      std::string meta = rec.at("meta").get<std::string>();
      if (committed != nullptr) committed->push_back(std::move(meta));
    } catch (const std::exception& e) {  // json's type and key errors, and the checks above
      malformed = Status::Corruption(log + ": the record at byte " + std::to_string(at) + " is malformed (" + e.what() +
                                     "): the store is damaged; nothing was changed");
    }
  });
  RETURN_IF_ERROR(malformed);
  // Commits append past the end, so no two stored chunks share bytes; if they
  // did, freeing one would punch the other.
  std::vector<uint64_t> offsets;
  offsets.reserve(index_.size());
  for (const auto& [key, loc] : index_) offsets.push_back(loc.offset);
  std::sort(offsets.begin(), offsets.end());
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] - offsets[i - 1] < RecordBytes())
      return Status::Corruption(log + ": two stored chunks overlap at byte " + std::to_string(offsets[i]) +
                                " of chunks.dat: the store is damaged; nothing was changed");
  const uint64_t data_end = offsets.empty() ? 0 : offsets.back() + RecordBytes();
  for (size_t q = pos + 1; q + 12 <= bytes.size(); ++q)
    if (RecordAt(bytes, q))
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
  return s;
}

StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::OpenExisting(const std::string& dir,
                                                                std::vector<std::string>* committed) {
  const std::string manifest = dir + "/MANIFEST";
  Env* env = Env::Default();
  StatusOr<std::string> text = ReadFileToString(env, manifest);
  if (text.status().IsNotFound()) return Status::NotFound(dir + ": no store here (MANIFEST missing)");
  if (!text.ok()) return text.status();
  StoreOptions opt;
  opt.env = env;
  try {
    json j = json::parse(*text);
    const json& g = j.at("geometry");
    opt.geometry = ChunkGeometry{GetInteger<int>(g.at("chunk_tokens")), GetInteger<int>(g.at("layers")),
                                 GetInteger<int>(g.at("kv_heads")),     GetInteger<int>(g.at("head_dim")),
                                 GetInteger<int>(g.at("probe_kv_heads")), GetInteger<int>(g.at("elem_bytes"))};
    opt.fingerprint = j.at("fingerprint").get<std::string>();
  } catch (const std::exception& e) {
    return Status::Corruption(manifest + ": corrupt manifest: " + e.what());
  }
  opt.create_if_missing = false;
  return Open(dir, opt, committed);
}

ChunkStore::~ChunkStore() { io_.reset(); }  // reads finish before the files close

Status ChunkStore::Commit(const std::vector<ChunkWrite>& writes, const std::string& meta) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t kb = opt_.geometry.KeyBytes(), pb = opt_.geometry.ProbeBytes();
  const size_t record = RecordBytes();
  std::vector<uint8_t> buf(record, 0);
  json chunks = json::array();
  std::vector<std::pair<std::pair<uint64_t, int>, ChunkLocation>> added;
  uint64_t off = data_end_;
  for (const auto& w : writes) {
    IMPRESS_CHECK(!index_.count({w.chunk_id, w.layer}));
    std::memset(buf.data(), 0, buf.size());
    std::memcpy(buf.data(), w.keys, kb);
    std::memcpy(buf.data() + PartStride(0), w.values, kb);
    std::memcpy(buf.data() + 2 * PartStride(0), w.probe, pb);
    RETURN_IF_ERROR(data_->Write(off, buf.data(), record));
    const ChunkLocation loc{off, {Crc32c(w.keys, kb), Crc32c(w.values, kb), Crc32c(w.probe, pb)}};
    chunks.push_back({{"id", w.chunk_id}, {"layer", w.layer}, {"off", off}, {"crc", loc.crc}});
    added.push_back({{w.chunk_id, w.layer}, loc});
    off += record;
  }
  RETURN_IF_ERROR(data_->Sync());
  RETURN_IF_ERROR(AppendLog(json{{"meta", meta}, {"chunks", chunks}}.dump()));
  index_.insert(added.begin(), added.end());
  data_end_ = off;
  counters_.bytes_written += record * writes.size();
  return Status::OK();
}

std::string LogRecord(const std::string& payload) {
  std::string rec(12, '\0');
  const uint32_t magic = kRecordMagic, len = static_cast<uint32_t>(payload.size()), crc = Crc32c(payload.data(), len);
  std::memcpy(&rec[0], &magic, 4);
  std::memcpy(&rec[4], &len, 4);
  std::memcpy(&rec[8], &crc, 4);
  return rec + payload;
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
  for (uint64_t id : ids)  // an id's layers are adjacent in the index
    for (auto it = index_.lower_bound({id, 0}); it != index_.end() && it->first.first == id;) {
      extents->push_back({it->second.offset, RecordBytes()});
      it = index_.erase(it);
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
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<uint64_t> stored;
    for (uint64_t id : std::set<uint64_t>(chunk_ids.begin(), chunk_ids.end())) {
      auto it = index_.lower_bound({id, 0});
      if (it != index_.end() && it->first.first == id) stored.push_back(id);
    }
    if (stored.empty()) return Status::OK();
    RETURN_IF_ERROR(AppendLog(json{{"free", stored}}.dump()));
    EraseLocked(stored, &extents);
  }
  // Outside the lock: nothing indexes these extents any more, and commits
  // append past the end of the file, never into them.
  if (stats != nullptr) {
    stats->chunk_layers += extents.size();
    stats->bytes += extents.size() * RecordBytes();
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
  std::lock_guard<std::mutex> lock(mu_);
  const std::string log = dir_ + "/log", tmp = dir_ + "/log.tmp";
  ASSIGN_OR_RETURN(const std::string bytes, ReadLog());
  // A commit record stays if any of its chunks is still indexed. Free's records
  // go, unless a kept record also names freed chunks (then replaying them
  // must still forget those). Open cut any torn tail, so every record is whole.
  struct Record {
    size_t pos, len;
    bool free, keep;
  };
  std::vector<Record> records;
  bool partial = false;
  ForEachRecord(bytes, [&](size_t pos, size_t len, const json& rec) {
    Record r{pos, len, rec.contains("free"), true};
    const json* chunks = r.free ? nullptr : &rec.at("chunks");  // Open checked every record's fields
    if (chunks != nullptr && !chunks->empty()) {
      size_t live = 0;
      for (const auto& c : *chunks) live += index_.count({c.at("id").get<uint64_t>(), c.at("layer").get<int>()});
      r.keep = live > 0;
      partial = partial || (live > 0 && live < chunks->size());
    }
    records.push_back(r);
  });
  std::string kept;
  for (const Record& r : records)
    if (r.free ? partial : r.keep) kept.append(bytes, r.pos, r.len);
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

size_t ChunkStore::chunk_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

Status ChunkStore::ReadOne(const ChunkRead& r) {
  ChunkLocation loc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find({r.chunk_id, r.layer});
    if (it == index_.end())
      return Status::NotFound(dir_ + ": chunk " + std::to_string(r.chunk_id) + " layer " + std::to_string(r.layer) +
                           " is not stored");
    loc = it->second;
  }
  const size_t sizes[3] = {opt_.geometry.KeyBytes(), opt_.geometry.KeyBytes(), opt_.geometry.ProbeBytes()};
  void* dst[3] = {r.keys, r.values, r.probe};
  // Adjacent parts (keys and values) are read with one request.
  int part = 0;
  while (part < 3) {
    if (!(r.parts & (1 << part))) {
      ++part;
      continue;
    }
    int last = part;
    while (last + 1 < 3 && (r.parts & (1 << (last + 1)))) ++last;
    const uint64_t start = loc.offset + PartStride(0) * part;
    size_t len = 0;
    for (int p = part; p <= last; ++p) len += PartStride(p);
    // One aligned buffer per I/O thread, grown as needed.
    thread_local std::unique_ptr<AlignedBuffer> tls;
    thread_local size_t tls_size = 0;
    if (tls_size < len) {
      tls = std::make_unique<AlignedBuffer>(len);
      tls_size = tls->p ? len : 0;
    }
    if (tls_size < len) return Status::IOError("out of memory for a direct read");
    AlignedBuffer& buf = *tls;
    const Status read = direct_->Read(start, len, buf.p);
    if (!read.ok()) {
      // A part past the end of the file is damage to the chunk (the file was
      // cut short), as a checksum mismatch is; any other failure is the device's.
      auto size = direct_->Size();
      if (size.ok() && start + len > *size)
        return Status::Corruption(dir_ + "/chunks.dat: chunk " + std::to_string(r.chunk_id) + " layer " +
                                  std::to_string(r.layer) + " lies past the end of the file (" +
                                  std::to_string(*size) + " bytes): the file was cut short");
      return read;
    }
    counters_.bytes_read += len;
    counters_.parts_read += last - part + 1;
    size_t at = 0;
    for (int p = part; p <= last; ++p) {
      const auto* src = static_cast<const uint8_t*>(buf.p) + at;
      if (Crc32c(src, sizes[p]) != loc.crc[p])
        return Status::Corruption(dir_ + "/chunks.dat: chunk " + std::to_string(r.chunk_id) + " layer " +
                             std::to_string(r.layer) + " part " + std::to_string(p) + " fails its checksum");
      std::memcpy(dst[p], src, sizes[p]);
      at += PartStride(p);
    }
    part = last + 1;
  }
  return Status::OK();
}

Status ChunkStore::Read(const std::vector<ChunkRead>& reads) {
  if (reads.size() == 1) return ReadOne(reads[0]);
  std::vector<Status> results(reads.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < reads.size(); ++i) tasks.push_back([&, i] { results[i] = ReadOne(reads[i]); });
  io_->RunAll(std::move(tasks));
  for (auto& s : results) RETURN_IF_ERROR(s);
  return Status::OK();
}

Status ChunkStore::Verify(uint64_t* chunks_checked) {
  std::vector<std::pair<uint64_t, int>> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : index_) keys.push_back(k);
  }
  std::vector<uint8_t> k(opt_.geometry.KeyBytes()), v(opt_.geometry.KeyBytes()), p(opt_.geometry.ProbeBytes());
  for (const auto& [id, layer] : keys) {
    RETURN_IF_ERROR(ReadOne({id, layer, kKeys | kValues | kProbeKeys, k.data(), v.data(), p.data()}));
    if (chunks_checked) ++*chunks_checked;
  }
  return Status::OK();
}

}  // namespace impress
