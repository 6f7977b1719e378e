#include "store/chunk_store.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>

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

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Aligned heap buffer for direct I/O.
struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t n) {
    if (posix_memalign(&p, kAlign, std::max(n, kAlign)) != 0) p = nullptr;
  }
  ~AlignedBuffer() { std::free(p); }
};

Status WriteAll(int fd, const void* data, size_t n, uint64_t offset, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(Errno(path + ": write failed"));
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

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

StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::Open(const std::string& dir, const StoreOptions& opt,
                                                        std::vector<std::string>* committed) {
  namespace fs = std::filesystem;
  const ChunkGeometry& g = opt.geometry;
  if (g.chunk_tokens < 1 || g.chunk_tokens > (1 << 16) || g.layers < 1 || g.layers > 4096 || g.kv_heads < 1 ||
      g.kv_heads > 4096 || g.head_dim < 1 || g.head_dim > 65536 || g.probe_kv_heads < 1 ||
      g.probe_kv_heads > g.kv_heads || (g.elem_bytes != 1 && g.elem_bytes != 2 && g.elem_bytes != 4))
    return Status::Corruption(dir + "/MANIFEST: corrupt manifest: geometry " + GeometryJson(g).dump() + " is out of range");
  std::unique_ptr<ChunkStore> s(new ChunkStore());
  s->dir_ = dir;
  s->opt_ = opt;
  const std::string manifest = dir + "/MANIFEST", data = dir + "/chunks.dat", log = dir + "/log";
  json want = {{"format", kFormatVersion}, {"fingerprint", opt.fingerprint}, {"geometry", GeometryJson(opt.geometry)}};
  std::error_code ec;
  if (!fs::exists(manifest)) {
    if (!opt.create_if_missing) return Status::NotFound(dir + ": no store here (MANIFEST missing)");
    fs::create_directories(dir, ec);
    if (ec) return Status::IOError(dir + ": cannot create: " + ec.message());
    std::string tmp = manifest + ".tmp";
    {
      std::ofstream out(tmp);
      out << want.dump() << "\n";
      if (!out.flush()) return Status::IOError(tmp + ": cannot write");
    }
    fs::rename(tmp, manifest, ec);
    if (ec) return Status::IOError(manifest + ": cannot create: " + ec.message());
  } else {
    std::ifstream in(manifest);
    int format;
    std::string fingerprint;
    json geometry;
    try {
      const json have = json::parse(in);
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
    if (fingerprint != opt.fingerprint)
      return Status::InvalidArgument(manifest + ": store was written for '" + fingerprint + "', not '" + opt.fingerprint + "'");
    if (geometry != want["geometry"])
      return Status::InvalidArgument(manifest + ": store geometry " + geometry.dump() + " differs from " +
                           want["geometry"].dump());
  }
  s->data_fd_ = ::open(data.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->data_fd_ < 0) return Status::IOError(Errno(data + ": cannot open"));
  s->direct_fd_ = ::open(data.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (s->direct_fd_ < 0) return Status::IOError(Errno(data + ": cannot open with O_DIRECT"));
  const std::string lock_path = dir + "/LOCK";
  s->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd_ < 0) return Status::IOError(Errno(lock_path + ": cannot open"));
  if (::flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return Status::IOError(errno == EWOULDBLOCK ? dir + ": in use by another process (LOCK is held)"
                                              : Errno(lock_path + ": cannot lock"));
  s->log_fd_ = ::open(log.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->log_fd_ < 0) return Status::IOError(Errno(log + ": cannot open"));

  // Replay the log up to the first record that is torn or fails its checksum.
  // Only a crash mid-append makes one, so it must be the last: a whole
  // record after it means the log itself is damaged, and cutting it there
  // would lose committed records.
  ASSIGN_OR_RETURN(const std::string bytes, s->ReadLog());
  // Extents of the last free record: a crash between it and its holes can
  // only have left that one's space allocated.
  std::vector<std::pair<uint64_t, uint64_t>> unpunched;
  // A whole record with a good checksum that does not say what a commit or a
  // free says was written by something else or by a bug: the store is damaged.
  Status malformed;
  const int layers = opt.geometry.layers;
  const size_t pos = ForEachRecord(bytes, [&](size_t at, size_t, const json& rec) {
    if (!malformed.ok()) return;
    try {
      if (rec.contains("free")) {  // Free's record: forget the chunks
        unpunched.clear();
        s->EraseLocked(GetIntegers<uint64_t>(rec.at("free")), &unpunched);
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
        s->index_[{GetInteger<uint64_t>(c.at("id")), layer}] = loc;
      }
      std::string meta = rec.at("meta").get<std::string>();
      if (committed != nullptr) committed->push_back(std::move(meta));
    } catch (const std::exception& e) {  // json's type and key errors, and the checks above
      malformed = Status::Corruption(log + ": the record at byte " + std::to_string(at) + " is malformed (" + e.what() +
                                "): the store is damaged; nothing was changed");
    }
  });
  if (!malformed.ok()) return malformed;
  // Commits append past the end, so no two stored chunks share bytes; if they
  // did, freeing one would punch the other.
  std::vector<uint64_t> offsets;
  offsets.reserve(s->index_.size());
  for (const auto& [key, loc] : s->index_) offsets.push_back(loc.offset);
  std::sort(offsets.begin(), offsets.end());
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] - offsets[i - 1] < s->RecordBytes())
      return Status::Corruption(log + ": two stored chunks overlap at byte " + std::to_string(offsets[i]) +
                           " of chunks.dat: the store is damaged; nothing was changed");
  const uint64_t data_end = offsets.empty() ? 0 : offsets.back() + s->RecordBytes();
  for (size_t q = pos + 1; q + 12 <= bytes.size(); ++q)
    if (RecordAt(bytes, q))
      return Status::Corruption(log + ": the record at byte " + std::to_string(pos) +
                           " is corrupt and whole records follow it (byte " + std::to_string(q) +
                           "): the store is damaged; nothing was changed");
  if (pos < bytes.size() && ::ftruncate(s->log_fd_, static_cast<off_t>(pos)) != 0)
    return Status::IOError(Errno(log + ": cannot cut off a torn tail"));
  // Punching again is harmless, and where it fails only space is wasted.
  (void)s->PunchHoles(std::move(unpunched));
  // New parts go after everything on disk, committed or not.
  struct stat st;
  ::fstat(s->data_fd_, &st);
  s->data_end_ = RoundUp(std::max<uint64_t>(data_end, static_cast<uint64_t>(st.st_size)));
  s->io_ = std::make_unique<ThreadPool>(std::max(1, opt.io_threads));
  return s;
}

StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::OpenExisting(const std::string& dir,
                                                                std::vector<std::string>* committed) {
  const std::string manifest = dir + "/MANIFEST";
  std::ifstream in(manifest);
  if (!in) return Status::NotFound(dir + ": no store here (MANIFEST missing)");
  StoreOptions opt;
  try {
    json j = json::parse(in);
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

ChunkStore::~ChunkStore() {
  io_.reset();
  for (int fd : {data_fd_, direct_fd_, log_fd_, lock_fd_})
    if (fd >= 0) ::close(fd);
}

Status ChunkStore::Commit(const std::vector<ChunkWrite>& writes, const std::string& meta) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string data_path = dir_ + "/chunks.dat";
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
    RETURN_IF_ERROR(WriteAll(data_fd_, buf.data(), record, off, data_path));
    const ChunkLocation loc{off, {Crc32c(w.keys, kb), Crc32c(w.values, kb), Crc32c(w.probe, pb)}};
    chunks.push_back({{"id", w.chunk_id}, {"layer", w.layer}, {"off", off}, {"crc", loc.crc}});
    added.push_back({{w.chunk_id, w.layer}, loc});
    off += record;
  }
  if (::fdatasync(data_fd_) != 0) return Status::IOError(Errno(data_path + ": sync failed"));
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
  const std::string log_path = dir_ + "/log";
  const std::string rec = LogRecord(payload);
  struct stat st;
  ::fstat(log_fd_, &st);
  Status w = WriteAll(log_fd_, rec.data(), rec.size(), static_cast<uint64_t>(st.st_size), log_path);
  if (!w.ok() || ::fdatasync(log_fd_) != 0) {
    // Leave no partial record behind: a later commit must not follow garbage.
    if (::ftruncate(log_fd_, st.st_size) != 0) {}
    return w.ok() ? Status::IOError(Errno(log_path + ": sync failed")) : w;
  }
  return Status::OK();
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
    if (::fallocate(data_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(start),
                    static_cast<off_t>(end - start)) != 0)
      return Status::IOError(Errno(dir_ + "/chunks.dat: cannot punch a hole (freed chunks keep their space)"));
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
  const std::string log = dir_ + "/log";
  struct stat st;
  if (::fstat(log_fd_, &st) != 0) return Status::IOError(Errno(log + ": cannot stat"));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (!bytes.empty() && ::pread(log_fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    return Status::IOError(Errno(log + ": cannot read"));
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
  // The new file's descriptor becomes the log's: once the rename is done
  // there is no second open that could fail and leave appends going to the
  // replaced file.
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(Errno(tmp + ": cannot create"));
  Status w = WriteAll(fd, kept.data(), kept.size(), 0, tmp);
  if (w.ok() && ::fdatasync(fd) != 0) w = Status::IOError(Errno(tmp + ": sync failed"));
  if (w.ok() && ::rename(tmp.c_str(), log.c_str()) != 0) w = Status::IOError(Errno(log + ": cannot replace"));
  if (!w.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return w;  // the old log is untouched
  }
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);  // the rename itself
    ::close(dir_fd);
  }
  ::close(log_fd_);
  log_fd_ = fd;
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

uint64_t ChunkStore::AllocatedBytes() const {
  struct stat st;
  if (::fstat(data_fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

uint64_t ChunkStore::LogBytes() const {
  std::lock_guard<std::mutex> lock(mu_);  // RewriteLog swaps log_fd_
  struct stat st;
  if (::fstat(log_fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

bool ChunkStore::Has(uint64_t chunk_id, int layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count({chunk_id, layer}) > 0;
}

size_t ChunkStore::chunk_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

void ChunkStore::Throttle(size_t bytes) {
  if (opt_.read_bytes_per_second <= 0) return;
  using clock = std::chrono::steady_clock;
  double now = std::chrono::duration<double>(clock::now().time_since_epoch()).count();
  double until;
  {
    std::lock_guard<std::mutex> lock(throttle_mu_);
    throttle_free_at_ = std::max(throttle_free_at_, now) + bytes / opt_.read_bytes_per_second;
    until = throttle_free_at_;
  }
  if (until > now) std::this_thread::sleep_for(std::chrono::duration<double>(until - now));
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
    Throttle(len);
    // One aligned buffer per I/O thread, grown as needed.
    thread_local std::unique_ptr<AlignedBuffer> tls;
    thread_local size_t tls_size = 0;
    if (tls_size < len) {
      tls = std::make_unique<AlignedBuffer>(len);
      tls_size = tls->p ? len : 0;
    }
    if (tls_size < len) return Status::IOError("out of memory for a direct read");
    AlignedBuffer& buf = *tls;
    size_t done = 0;
    while (done < len) {
      ssize_t n = ::pread(direct_fd_, static_cast<uint8_t*>(buf.p) + done, len - done, static_cast<off_t>(start + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::IOError(Errno(dir_ + "/chunks.dat: read at " + std::to_string(start) + " failed"));
      done += static_cast<size_t>(n);
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
