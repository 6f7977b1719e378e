#include "store/log_format.h"

#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_get.h"
#include "common/crc32c.h"

namespace impress {
namespace {

using nlohmann::json;

constexpr uint32_t kRecordMagic = 0x4B564C47;  // "GLVK"
constexpr size_t kHeader = 12;

// A whole record starts at `pos`: magic, a length that fits, a matching
// checksum. Sets *len to its payload's length.
bool WholeAt(const std::string& log, size_t pos, uint32_t* len) {
  if (pos + kHeader > log.size()) return false;
  uint32_t magic, crc;
  std::memcpy(&magic, &log[pos], 4);
  std::memcpy(len, &log[pos + 4], 4);
  std::memcpy(&crc, &log[pos + 8], 4);
  return magic == kRecordMagic && *len <= log.size() - pos - kHeader && Crc32c(&log[pos + kHeader], *len) == crc;
}

// What a whole record's JSON object says. Throws (json's key and type
// errors, GetInteger's range errors, the checks here) when it is malformed.
void ParseEntry(const json& rec, const ChunkGeometry& g, LogEntry* e) {
  const int layers = g.layers;
  if (rec.contains("free")) {
    e->free = true;
    e->freed = GetIntegers<uint64_t>(rec.at("free"));
    return;
  }
  for (const auto& c : rec.at("chunks")) {
    StoredChunk s;
    s.loc.offset = GetInteger<uint64_t>(c.at("off"));
    const json& crc = c.at("crc");
    const size_t parts = g.digests ? 4 : 3;  // the digest's checksum only where the store keeps digests
    if (crc.size() != parts)
      throw std::invalid_argument("a chunk has " + std::to_string(crc.size()) + " checksums, not " + std::to_string(parts));
    for (size_t i = 0; i < parts; ++i) s.loc.crc[i] = GetInteger<uint32_t>(crc.at(i));
    s.layer = GetInteger<int>(c.at("layer"));
    if (s.layer < 0 || s.layer >= layers) throw std::invalid_argument("layer " + std::to_string(s.layer) + " out of range");
    if (s.loc.offset % kDirectAlign != 0 || s.loc.offset > (uint64_t{1} << 56))
      throw std::invalid_argument("chunk offset " + std::to_string(s.loc.offset) + " is not a 4 KiB boundary in range");
    s.id = GetInteger<uint64_t>(c.at("id"));
    s.loc.codec = g.codec;
    if (c.contains("codec")) {
      StatusOr<KvCodec> codec = ParseKvCodec(c.at("codec").get<std::string>());
      if (!codec.ok()) throw std::invalid_argument("a chunk's codec " + c.at("codec").dump() + " is unknown");
      s.loc.codec = *codec;
    }
    e->chunks.push_back(s);
  }
  e->meta = rec.at("meta").get<std::string>();
}

// The record at `pos` (whole, payload `len` bytes): false when its payload
// is not a JSON object; else *e, or *why when it is malformed.
bool ParseAt(const std::string& log, size_t pos, uint32_t len, const ChunkGeometry& g, LogEntry* e, std::string* why) {
  const json rec = json::parse(log.begin() + pos + kHeader, log.begin() + pos + kHeader + len, nullptr, false);
  if (!rec.is_object()) return false;
  e->pos = pos;
  e->len = kHeader + len;
  try {
    ParseEntry(rec, g, e);
  } catch (const std::exception& ex) {
    *why = ex.what();
  }
  return true;
}

}  // namespace

std::string LogRecord(const std::string& payload) {
  std::string rec(kHeader, '\0');
  const uint32_t magic = kRecordMagic, len = static_cast<uint32_t>(payload.size()), crc = Crc32c(payload.data(), len);
  std::memcpy(&rec[0], &magic, 4);
  std::memcpy(&rec[4], &len, 4);
  std::memcpy(&rec[8], &crc, 4);
  return rec + payload;
}

std::string CommitPayload(const std::string& meta, const std::vector<StoredChunk>& chunks, const ChunkGeometry& g) {
  json list = json::array();
  for (const StoredChunk& c : chunks) {
    const std::vector<uint32_t> crc(c.loc.crc, c.loc.crc + (g.digests ? 4 : 3));
    list.push_back({{"id", c.id}, {"layer", c.layer}, {"off", c.loc.offset}, {"crc", crc}});
    if (c.loc.codec != g.codec) list.back()["codec"] = KvCodecName(c.loc.codec);
  }
  return json{{"meta", meta}, {"chunks", std::move(list)}}.dump();
}

std::string FreePayload(const std::vector<uint64_t>& ids) { return json{{"free", ids}}.dump(); }

Status ReadLogEntries(const std::string& log, const ChunkGeometry& g, std::vector<LogEntry>* entries, size_t* end) {
  size_t pos = 0;
  uint32_t len;
  while (WholeAt(log, pos, &len)) {
    LogEntry e;
    std::string why;
    if (!ParseAt(log, pos, len, g, &e, &why)) break;
    if (!why.empty())
      return Status::Corruption("the record at byte " + std::to_string(pos) + " is malformed (" + why + ")");
    entries->push_back(std::move(e));
    pos += kHeader + len;
  }
  *end = pos;
  return Status::OK();
}

size_t NextWholeRecord(const std::string& log, size_t from) {
  uint32_t len;
  for (size_t q = from + 1; q + kHeader <= log.size(); ++q)
    if (WholeAt(log, q, &len)) return q;
  return std::string::npos;
}

SalvagedLog SalvageLog(const std::string& log, const ChunkGeometry& g) {
  SalvagedLog out;
  size_t pos = 0;
  bool in_damage = false;
  while (pos < log.size()) {
    uint32_t len;
    LogEntry e;
    std::string why;
    if (WholeAt(log, pos, &len) && ParseAt(log, pos, len, g, &e, &why)) {
      if (why.empty()) out.entries.push_back(std::move(e));
      else ++out.malformed;
      pos += kHeader + len;
      in_damage = false;
      continue;
    }
    if (!in_damage) ++out.damaged_runs;
    in_damage = true;
    ++out.bytes_skipped;
    ++pos;
  }
  return out;
}

}  // namespace impress
