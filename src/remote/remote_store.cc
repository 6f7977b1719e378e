#include "remote/remote_store.h"

#include <cstdio>
#include <cstring>

#include "common/crc32c.h"

namespace impress {
namespace {

const char kPartName[3] = {'k', 'v', 'p'};
const uint8_t kPartBit[3] = {kKeys, kValues, kProbeKeys};

// A marker: the parent key (16 bytes), the tokens (4 bytes each, little-endian), the codec (1 byte).
size_t MarkerBytes(size_t tokens) { return 16 + 4 * tokens + 1; }

// [CRC-32C of payload][payload]
std::string Frame(const void* payload, size_t n) {
  std::string s(4 + n, '\0');
  const uint32_t crc = Crc32c(payload, n);
  for (int b = 0; b < 4; ++b) s[b] = static_cast<char>(crc >> (8 * b));
  std::memcpy(&s[4], payload, n);
  return s;
}

// A get of a framed value of `n` payload bytes into `payload`.
GetOp FramedGet(std::string key, void* payload, size_t n) {
  GetOp op;
  op.key = std::move(key);
  op.into.head_bytes = 4;
  op.into.body = payload;
  op.into.body_bytes = n;
  return op;
}

// The get's status, a checksum mismatch included.
Status Unframe(const GetOp& op) {
  if (!op.status.ok()) return op.status;
  uint32_t crc = 0;
  for (int b = 0; b < 4; ++b) crc |= static_cast<uint32_t>(op.into.head[b]) << (8 * b);
  if (op.into.body_crc != crc) return Status::Corruption(op.key + ": checksum mismatch");
  return Status::OK();
}

}  // namespace

std::string MarkerKeyName(const ContentKey& k) { return "imp:{" + k.Hex() + "}:m"; }
std::string PartKeyName(const ContentKey& k, int layer, int part) {
  return "imp:{" + k.Hex() + "}:L" + std::to_string(layer) + ":" + kPartName[part];
}

RemoteStore::RemoteStore(const RemoteOptions& opt) : opt_(opt) {
  if (opt.bytes_per_second > 0) pacer_ = std::make_unique<Pacer>(opt.bytes_per_second);
}

StatusOr<std::unique_ptr<RemoteStore>> RemoteStore::Connect(const RemoteOptions& opt) {
  std::unique_ptr<RemoteStore> s(new RemoteStore(opt));
  ConnectorOptions c{opt.url, opt.timeout_ms, &s->counters_.cluster};
  ASSIGN_OR_RETURN(s->connector_, ConnectRemote(c));
  s->writer_ = std::thread([p = s.get()] { p->WriterLoop(); });
  return s;
}

RemoteStore::~RemoteStore() {
  if (writer_.joinable()) {
    Flush();
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      stop_ = true;
    }
    write_cv_.notify_all();
    writer_.join();
  }
}

int64_t RemoteStore::FindChain(const ContentKey& parent, const std::vector<int32_t>& tokens, size_t first,
                               size_t count, int chunk_tokens, KvCodec codec, std::vector<ContentKey>* keys) {
  *keys = ChainKeys(parent, tokens, first, count, chunk_tokens);
  if (count == 0) return 0;
  counters_.lookups += static_cast<int64_t>(count);
  const size_t c = static_cast<size_t>(chunk_tokens), marker_bytes = MarkerBytes(c);
  std::vector<uint8_t> markers(count * marker_bytes);
  std::vector<GetOp> ops;
  ops.reserve(count);
  for (size_t i = 0; i < count; ++i) ops.push_back(FramedGet(MarkerKeyName((*keys)[i]), &markers[i * marker_bytes], marker_bytes));
  connector_->Get(&ops, {});
  std::vector<bool> match(count, false);
  for (size_t i = 0; i < count; ++i) {
    const Status st = Unframe(ops[i]);
    if (st.IsIOError()) counters_.read_errors++;
    if (!st.ok()) continue;
    // The marker must describe this very chunk: its parent and its tokens.
    const uint8_t* p = &markers[i * marker_bytes];
    const ContentKey& up = i == 0 ? parent : (*keys)[i - 1];
    const int32_t* want = tokens.data() + (first + i) * c;
    match[i] = std::memcmp(p, up.bytes.data(), 16) == 0;
    for (size_t t = 0; match[i] && t < c; ++t) {
      uint32_t v = 0;
      for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(p[16 + 4 * t + b]) << (8 * b);
      match[i] = v == static_cast<uint32_t>(want[t]);
    }
    const uint8_t stored = p[16 + 4 * c];
    const KvCodec expected = ChunkCodec(codec, static_cast<int64_t>(first + i));
    if (match[i] && stored != static_cast<uint8_t>(expected)) {
      match[i] = false;
      counters_.codec_mismatches++;
      if (!told_mismatch_.exchange(true))
        std::fprintf(stderr, "remote tier: chunk %s was written with KV codec %s, read as %s: refused (recomputed)\n",
                     (*keys)[i].Hex().c_str(), stored <= 2 ? KvCodecName(static_cast<KvCodec>(stored)) : "unknown",
                     KvCodecName(expected));
    }
  }
  int64_t run = 0;
  while (run < static_cast<int64_t>(count) && match[run]) ++run;
  counters_.chunks_found += run;
  return run;
}

void RemoteStore::ReadParts(const ChunkGeometry& g, std::vector<Read>* reads) {
  std::vector<GetOp> ops;
  std::vector<size_t> read_of;  // ops[i] reads a part of (*reads)[read_of[i]]
  for (size_t i = 0; i < reads->size(); ++i) {
    Read& r = (*reads)[i];
    r.status = Status::OK();
    void* dst[3] = {r.keys, r.values, r.probe};
    for (int p = 0; p < 3; ++p)
      if (r.parts & kPartBit[p]) ops.push_back(FramedGet(PartKeyName(r.key, r.layer, p), dst[p], g.PartBytes(p, r.codec))), read_of.push_back(i);
  }
  if (ops.empty()) return;
  counters_.parts_read += static_cast<int64_t>(ops.size());
  // Layer 0's reads also touch the chunk's marker, so that eviction by
  // recency keeps the markers of the prefixes in use (only a machine that
  // lacks a prefix reads them).
  std::vector<std::string> markers;
  for (const Read& r : *reads)
    if (r.layer == 0) markers.push_back(MarkerKeyName(r.key));
  connector_->Get(&ops, markers);
  size_t bytes = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Status s = Unframe(ops[i]);
    Read& r = (*reads)[read_of[i]];
    if (s.ok()) {
      bytes += ops[i].into.body_bytes;
      continue;
    }
    if (s.IsNotFound()) counters_.parts_missing++;
    else if (s.IsCorruption()) counters_.parts_corrupt++;
    else counters_.read_errors++;
    if (r.status.ok()) r.status = s;
  }
  counters_.bytes_read += static_cast<int64_t>(bytes);
  if (pacer_ && bytes > 0) pacer_->Wait(bytes);
}

void RemoteStore::WriteAsync(std::vector<Chunk> chunks) {
  if (chunks.empty()) return;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    queue_.push_back(std::move(chunks));
  }
  write_cv_.notify_all();
}

void RemoteStore::Flush() {
  std::unique_lock<std::mutex> lock(write_mu_);
  drained_cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void RemoteStore::WriterLoop() {
  for (;;) {
    std::vector<Chunk> batch;
    {
      std::unique_lock<std::mutex> lock(write_mu_);
      write_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      batch = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    for (const Chunk& chunk : batch) WriteOne(chunk);
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      writing_ = false;
    }
    drained_cv_.notify_all();
  }
}

void RemoteStore::WriteOne(const Chunk& chunk) {
  const int layers = static_cast<int>(chunk.layers.size());
  std::vector<SetOp> parts(3 * layers);
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < 3; ++p) {
      parts[3 * l + p].key = PartKeyName(chunk.key, l, p);
      parts[3 * l + p].value = Frame(chunk.layers[l].bytes[p].data_ptr(), chunk.geometry.PartBytes(p, chunk.codec));
    }
  connector_->Set(&parts);
  int64_t failed = 0;
  for (const SetOp& op : parts) {
    if (op.status.ok()) counters_.bytes_written += static_cast<int64_t>(op.value.size());
    else failed++;
  }
  counters_.write_errors += failed;
  if (failed > 0) return;  // no marker: readers must not look for a chunk that is not whole
  std::string marker(MarkerBytes(chunk.tokens.size()), '\0');
  std::memcpy(&marker[0], chunk.parent.bytes.data(), 16);
  for (size_t t = 0; t < chunk.tokens.size(); ++t)
    for (int b = 0; b < 4; ++b) marker[16 + 4 * t + b] = static_cast<char>(static_cast<uint32_t>(chunk.tokens[t]) >> (8 * b));
  marker[16 + 4 * chunk.tokens.size()] = static_cast<char>(chunk.codec);
  std::vector<SetOp> mark(1);
  mark[0].key = MarkerKeyName(chunk.key);
  mark[0].value = Frame(marker.data(), marker.size());
  connector_->Set(&mark);
  if (mark[0].status.ok()) counters_.chunks_written++, counters_.bytes_written += static_cast<int64_t>(mark[0].value.size());
  else counters_.write_errors++;
}

StatusOr<nlohmann::ordered_json> RemoteStore::ClusterStats() { return connector_->Stats(); }

}  // namespace impress
