#include "remote/remote_store.h"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <cstring>

#include "remote/redis_cluster.h"
#include "store/crc32c.h"

namespace impress {
namespace {

const char kPartName[3] = {'k', 'v', 'p'};
const uint8_t kPartBit[3] = {kKeys, kValues, kProbeKeys};

// [CRC-32C of payload][payload]
std::string Frame(const void* payload, size_t n) {
  std::string s(4 + n, '\0');
  const uint32_t crc = Crc32c(payload, n);
  for (int b = 0; b < 4; ++b) s[b] = static_cast<char>(crc >> (8 * b));
  std::memcpy(&s[4], payload, n);
  return s;
}

// The payload of a framed value of `n` payload bytes, checked.
Status Unframe(const redisReply* r, size_t n, const std::string& key, const char** payload) {
  if (r->type == REDIS_REPLY_NIL) return Status::NotFound(key + ": not in the cluster");
  if (r->type != REDIS_REPLY_STRING) return Status::Corruption(key + ": not a string value");
  if (r->len != 4 + n)
    return Status::Corruption(key + ": " + std::to_string(r->len) + " bytes, expected " + std::to_string(4 + n));
  uint32_t crc = 0;
  for (int b = 0; b < 4; ++b) crc |= static_cast<uint32_t>(static_cast<uint8_t>(r->str[b])) << (8 * b);
  if (Crc32c(r->str + 4, n) != crc) return Status::Corruption(key + ": checksum mismatch");
  *payload = r->str + 4;
  return Status::OK();
}

RedisCluster::Command Cmd(std::initializer_list<const std::string*> args) {
  RedisCluster::Command c;
  for (const std::string* a : args) c.argv.push_back(a->data()), c.len.push_back(a->size());
  return c;
}

}  // namespace

std::string MarkerKeyName(const ContentKey& k) { return "imp:{" + k.Hex() + "}:m"; }
std::string PartKeyName(const ContentKey& k, int layer, int part) {
  return "imp:{" + k.Hex() + "}:L" + std::to_string(layer) + ":" + kPartName[part];
}

nlohmann::ordered_json RemoteCounters::ToJson() const {
  return {{"lookups", lookups.load()}, {"chunks_found", chunks_found.load()}, {"parts_read", parts_read.load()},
          {"parts_missing", parts_missing.load()}, {"parts_corrupt", parts_corrupt.load()},
          {"read_errors", read_errors.load()}, {"bytes_read", bytes_read.load()},
          {"chunks_written", chunks_written.load()}, {"write_errors", write_errors.load()},
          {"bytes_written", bytes_written.load()}, {"moved", cluster.moved.load()}, {"ask", cluster.ask.load()},
          {"slot_reloads", cluster.slot_reloads.load()}, {"reconnects", cluster.reconnects.load()},
          {"timeouts", cluster.timeouts.load()}};
}

RemoteStore::RemoteStore(const RemoteOptions& opt) : opt_(opt) {
  if (opt.bytes_per_second > 0) pacer_ = std::make_unique<Pacer>(opt.bytes_per_second);
}

StatusOr<std::unique_ptr<RemoteStore>> RemoteStore::Connect(const RemoteOptions& opt) {
  std::unique_ptr<RemoteStore> s(new RemoteStore(opt));
  ASSIGN_OR_RETURN(s->seeds_, ParseRedisUrl(opt.url));
  auto first = s->Take();
  if (!first.ok()) return first.status().WithContext("--remote " + opt.url);
  s->Give(*std::move(first));
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

size_t PartBytes(const ChunkGeometry& g, int part) { return part == 2 ? g.ProbeBytes() : g.KeyBytes(); }

StatusOr<std::unique_ptr<RedisCluster>> RemoteStore::Take() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  ClusterOptions o{seeds_, opt_.timeout_ms};
  o.counters = &counters_.cluster;
  return RedisCluster::Connect(o);
}

void RemoteStore::Give(std::unique_ptr<RedisCluster> c) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  idle_.push_back(std::move(c));
}

int64_t RemoteStore::FindChain(const ContentKey& parent, const std::vector<int32_t>& tokens, size_t first,
                               size_t count, int chunk_tokens, std::vector<ContentKey>* keys) {
  *keys = ChainKeys(parent, tokens, first, count, chunk_tokens);
  if (count == 0) return 0;
  auto client = Take();
  counters_.lookups += static_cast<int64_t>(count);
  if (!client.ok()) {
    counters_.read_errors += static_cast<int64_t>(count);
    return 0;
  }
  const size_t c = static_cast<size_t>(chunk_tokens);
  const std::string get = "GET";
  std::vector<std::string> names;
  for (const ContentKey& k : *keys) names.push_back(MarkerKeyName(k));
  std::vector<RedisCluster::Command> cmds;
  for (const std::string& n : names) cmds.push_back(Cmd({&get, &n}));
  std::vector<bool> match(count, false);
  (*client)->Run(cmds, [&](size_t i, const redisReply* r, const Status& st) {
    if (!st.ok()) {
      counters_.read_errors++;
      return;
    }
    const char* p = nullptr;
    if (!Unframe(r, 16 + 4 * c, names[i], &p).ok()) return;
    // The marker must describe this very chunk: its parent and its tokens.
    const ContentKey& up = i == 0 ? parent : (*keys)[i - 1];
    const int32_t* want = tokens.data() + (first + i) * c;
    match[i] = std::memcmp(p, up.bytes.data(), 16) == 0;
    for (size_t t = 0; match[i] && t < c; ++t) {
      uint32_t v = 0;
      for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[16 + 4 * t + b])) << (8 * b);
      match[i] = v == static_cast<uint32_t>(want[t]);
    }
  });
  Give(*std::move(client));
  int64_t run = 0;
  while (run < static_cast<int64_t>(count) && match[run]) ++run;
  counters_.chunks_found += run;
  return run;
}

void RemoteStore::ReadParts(const ChunkGeometry& g, std::vector<Read>* reads) {
  struct Want {
    size_t read;
    int part;
  };
  std::vector<Want> wants;
  std::vector<std::string> names;
  for (size_t i = 0; i < reads->size(); ++i) {
    Read& r = (*reads)[i];
    r.status = Status::OK();
    for (int p = 0; p < 3; ++p)
      if (r.parts & kPartBit[p]) wants.push_back({i, p}), names.push_back(PartKeyName(r.key, r.layer, p));
  }
  if (wants.empty()) return;
  counters_.parts_read += static_cast<int64_t>(wants.size());
  auto client = Take();
  if (!client.ok()) {
    for (Read& r : *reads) r.status = client.status();
    counters_.read_errors += static_cast<int64_t>(wants.size());
    return;
  }
  const std::string get = "GET", touch = "TOUCH";
  std::vector<RedisCluster::Command> cmds;
  for (const std::string& n : names) cmds.push_back(Cmd({&get, &n}));
  // Layer 0's reads also touch the chunk's marker, so that eviction by
  // recency keeps the markers of the prefixes in use (only a machine that
  // lacks a prefix reads them).
  std::vector<std::string> markers;
  for (const Read& r : *reads)
    if (r.layer == 0) markers.push_back(MarkerKeyName(r.key));
  for (const std::string& m : markers) cmds.push_back(Cmd({&touch, &m}));
  size_t bytes = 0;
  (*client)->Run(cmds, [&](size_t w, const redisReply* reply, const Status& st) {
    if (w >= wants.size()) return;  // a touch: nothing to check
    Read& r = (*reads)[wants[w].read];
    const int part = wants[w].part;
    Status s = st;
    const char* payload = nullptr;
    if (s.ok()) s = Unframe(reply, PartBytes(g, part), names[w], &payload);
    if (!s.ok()) {
      if (s.IsNotFound()) counters_.parts_missing++;
      else if (s.IsCorruption()) counters_.parts_corrupt++;
      else counters_.read_errors++;
      if (r.status.ok()) r.status = s;
      return;
    }
    void* dst = part == 0 ? r.keys : part == 1 ? r.values : r.probe;
    std::memcpy(dst, payload, PartBytes(g, part));
    bytes += PartBytes(g, part);
  });
  Give(*std::move(client));
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
  std::unique_ptr<RedisCluster> client;
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
    if (!client) {
      auto c = Take();
      if (c.ok()) client = *std::move(c);
    }
    for (const Chunk& chunk : batch) {
      if (client) WriteOne(*client, chunk);
      else counters_.write_errors += 1;
    }
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      writing_ = false;
    }
    drained_cv_.notify_all();
  }
}

void RemoteStore::WriteOne(RedisCluster& client, const Chunk& chunk) {
  const std::string set = "SET";
  const int layers = static_cast<int>(chunk.keys.size());
  std::vector<std::string> names, values;
  names.reserve(3 * layers + 1);
  values.reserve(3 * layers + 1);
  for (int l = 0; l < layers; ++l) {
    const void* src[3] = {chunk.keys[l], chunk.values[l], chunk.probe[l]};
    for (int p = 0; p < 3; ++p) {
      names.push_back(PartKeyName(chunk.key, l, p));
      values.push_back(Frame(src[p], PartBytes(chunk.geometry, p)));
    }
  }
  std::vector<RedisCluster::Command> cmds;
  for (size_t i = 0; i < names.size(); ++i) cmds.push_back(Cmd({&set, &names[i], &values[i]}));
  int64_t failed = 0, bytes = 0;
  client.Run(cmds, [&](size_t i, const redisReply*, const Status& st) {
    if (st.ok()) bytes += static_cast<int64_t>(values[i].size());
    else failed++;
  });
  counters_.bytes_written += bytes;
  counters_.write_errors += failed;
  if (failed > 0) return;  // no marker: readers must not look for a chunk that is not whole
  std::string marker(16 + 4 * chunk.tokens.size(), '\0');
  std::memcpy(&marker[0], chunk.parent.bytes.data(), 16);
  for (size_t t = 0; t < chunk.tokens.size(); ++t)
    for (int b = 0; b < 4; ++b) marker[16 + 4 * t + b] = static_cast<char>(static_cast<uint32_t>(chunk.tokens[t]) >> (8 * b));
  const std::string name = MarkerKeyName(chunk.key), value = Frame(marker.data(), marker.size());
  client.Run({Cmd({&set, &name, &value})}, [&](size_t, const redisReply*, const Status& st) {
    if (st.ok()) counters_.chunks_written++, counters_.bytes_written += static_cast<int64_t>(value.size());
    else counters_.write_errors++;
  });
}

StatusOr<nlohmann::ordered_json> RemoteStore::ClusterStats() {
  ASSIGN_OR_RETURN(std::unique_ptr<RedisCluster> client, Take());
  const std::vector<std::string> masters = client->masters();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& m : masters) out.push_back({{"master", m}});
  Status failed;
  auto field = [](const std::string& info, const std::string& name) -> std::string {
    const size_t at = info.find("\n" + name + ":");
    if (at == std::string::npos) return "";
    const size_t start = at + name.size() + 2, end = info.find_first_of("\r\n", start);
    return info.substr(start, end - start);
  };
  client->RunOnMasters({"DBSIZE"}, [&](size_t i, const redisReply* r, const Status& st) {
    if (!st.ok()) failed = st;
    else out[i]["keys"] = r->integer;
  });
  client->RunOnMasters({"INFO"}, [&](size_t i, const redisReply* r, const Status& st) {
    if (!st.ok()) {
      failed = st;
      return;
    }
    std::string info = "\n";
    info.append(r->str, r->len);
    auto number = [&](const std::string& name) { return std::strtoll(field(info, name).c_str(), nullptr, 10); };
    out[i]["used_memory"] = number("used_memory");
    out[i]["maxmemory"] = number("maxmemory");
    out[i]["maxmemory_policy"] = field(info, "maxmemory_policy");
    out[i]["evicted_keys"] = number("evicted_keys");
  });
  Give(std::move(client));
  if (!failed.ok()) return failed;
  return out;
}

}  // namespace impress
