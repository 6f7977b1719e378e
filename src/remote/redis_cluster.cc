#include "remote/redis_cluster.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>

#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

namespace impress {
namespace {

constexpr int kSlots = 16384;

timeval Timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

bool SplitHostPort(const std::string& s, std::string* host, int* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  *host = s.substr(0, colon);
  try {
    size_t used = 0;
    *port = std::stoi(s.substr(colon + 1), &used);
    return used == s.size() - colon - 1 && *port > 0 && *port < 65536;
  } catch (const std::exception&) {
    return false;
  }
}

std::string Address(const std::string& host, int port) { return host + ":" + std::to_string(port); }

// "MOVED 3999 127.0.0.1:6381" -> slot and address.
bool ParseRedirect(const std::string& err, const char* kind, int* slot, std::string* host, int* port) {
  const std::string prefix = std::string(kind) + " ";
  if (err.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t space = err.find(' ', prefix.size());
  if (space == std::string::npos) return false;
  try {
    *slot = std::stoi(err.substr(prefix.size(), space - prefix.size()));
  } catch (const std::exception&) {
    return false;
  }
  return *slot >= 0 && *slot < kSlots && SplitHostPort(err.substr(space + 1), host, port);
}

}  // namespace

StatusOr<std::vector<std::string>> ParseRedisUrl(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("redis://", 0) == 0) rest = rest.substr(8);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = std::min(rest.find(',', start), rest.size());
    const std::string one = rest.substr(start, comma - start);
    std::string host;
    int port = 0;
    if (!SplitHostPort(one, &host, &port))
      return Status::InvalidArgument("--remote " + url + ": '" + one + "' is not HOST:PORT");
    out.push_back(one);
    start = comma + 1;
  }
  return out;
}

uint16_t KeySlot(const char* key, size_t len) {
  // The hash tag: the part between the first '{' and the next '}', if not empty.
  for (size_t s = 0; s < len; ++s) {
    if (key[s] != '{') continue;
    for (size_t e = s + 1; e < len; ++e) {
      if (key[e] != '}') continue;
      if (e > s + 1) key += s + 1, len = e - s - 1;
      break;
    }
    break;
  }
  // CRC16-CCITT (XMODEM), the cluster specification's, a byte at a time.
  static const std::array<uint16_t, 256> kTable = [] {
    std::array<uint16_t, 256> t{};
    for (int b = 0; b < 256; ++b) {
      uint16_t crc = static_cast<uint16_t>(b << 8);
      for (int i = 0; i < 8; ++i) crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
      t[b] = crc;
    }
    return t;
  }();
  uint16_t crc = 0;
  for (size_t i = 0; i < len; ++i) crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ static_cast<uint8_t>(key[i])) & 0xFF]);
  return crc % kSlots;
}

StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Connect(const ClusterOptions& opt) {
  if (opt.seeds.empty()) return Status::InvalidArgument("--remote: no cluster address");
  std::unique_ptr<RedisCluster> c(new RedisCluster(opt));
  for (const std::string& s : opt.seeds) {
    std::string host;
    int port = 0;
    if (!SplitHostPort(s, &host, &port)) return Status::InvalidArgument("--remote: '" + s + "' is not HOST:PORT");
    c->NodeFor(host, port);
  }
  RETURN_IF_ERROR(c->LoadSlots());
  return c;
}

RedisCluster::~RedisCluster() {
  for (Node& n : nodes_)
    if (n.ctx) redisFree(n.ctx);
}

int RedisCluster::NodeFor(const std::string& host, int port) {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].host == host && nodes_[i].port == port) return static_cast<int>(i);
  nodes_.push_back({host, port, nullptr});
  return static_cast<int>(nodes_.size()) - 1;
}

redisContext* RedisCluster::Conn(int node, Status* error) {
  Node& n = nodes_[node];
  if (n.ctx) return n.ctx;
  redisContext* ctx = redisConnectWithTimeout(n.host.c_str(), n.port, Timeval(opt_.timeout_ms));
  if (ctx == nullptr || ctx->err) {
    if (ctx) CountTimeout(ctx);
    *error = Status::IOError(Address(n.host, n.port) + ": cannot connect: " + (ctx ? ctx->errstr : "out of memory"));
    if (ctx) redisFree(ctx);
    return nullptr;
  }
  redisSetTimeout(ctx, Timeval(opt_.timeout_ms));
  if (n.connected_before) Count(&ConnectorCounters::reconnects);
  n.connected_before = true;
  n.ctx = ctx;
  return ctx;
}

void RedisCluster::CountTimeout(const redisContext* ctx) {
  // hiredis 0.14 reports a socket timeout as an I/O error with strerror's text.
  if (std::strstr(ctx->errstr, "timed out") != nullptr || std::strstr(ctx->errstr, "temporarily unavailable") != nullptr)
    Count(&ConnectorCounters::timeouts);
}

void RedisCluster::Drop(int node) {
  if (nodes_[node].ctx) redisFree(nodes_[node].ctx);
  nodes_[node].ctx = nullptr;
}

Status RedisCluster::LoadSlots() {
  std::string tried;
  Status last;
  // Known nodes in order: the seeds first, then what earlier maps named.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int node = static_cast<int>(i);
    redisContext* ctx = Conn(node, &last);
    if (ctx == nullptr) {
      tried += (tried.empty() ? "" : "; ") + last.message();
      continue;
    }
    auto* r = static_cast<redisReply*>(redisCommand(ctx, "CLUSTER SLOTS"));
    if (r == nullptr) {
      tried += (tried.empty() ? "" : "; ") + Address(nodes_[i].host, nodes_[i].port) + ": " + ctx->errstr;
      Drop(node);
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string msg = Address(nodes_[i].host, nodes_[i].port) + " is not a Redis Cluster node: " + r->str;
      freeReplyObject(r);
      return Status::InvalidArgument(msg);
    }
    std::vector<int> owner(kSlots, -1);
    const std::string queried = nodes_[i].host;
    for (size_t e = 0; r->type == REDIS_REPLY_ARRAY && e < r->elements; ++e) {
      const redisReply* range = r->element[e];
      if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) continue;
      const redisReply* master = range->element[2];
      if (master->type != REDIS_REPLY_ARRAY || master->elements < 2) continue;
      std::string host(master->element[0]->str ? master->element[0]->str : "", master->element[0]->len);
      if (host.empty()) host = queried;  // a node that does not know its own address
      const int at = NodeFor(host, static_cast<int>(master->element[1]->integer));
      for (long long s = range->element[0]->integer; s <= range->element[1]->integer && s < kSlots; ++s)
        if (s >= 0) owner[s] = at;
    }
    freeReplyObject(r);
    slot_owner_ = std::move(owner);
    return Status::OK();
  }
  return Status::IOError("no cluster node answered (" + tried + ")");
}

struct RedisCluster::Attempt {
  explicit Attempt(size_t n) : ask(n, -1), failed(n) {}
  std::vector<size_t> todo, retry;  // this attempt's commands, the next one's
  std::vector<int> ask;             // a one-shot ASK target per command, or -1
  std::vector<Status> failed;       // why a command is tried again
  bool reload = false;              // read the slot map before the next attempt
};

std::string RedisCluster::AddressOf(int node) const { return Address(nodes_[node].host, nodes_[node].port); }

std::vector<std::pair<int, std::vector<size_t>>> RedisCluster::Route(Attempt& a, const std::vector<Command>& cmds) {
  std::map<int, std::vector<size_t>> by_node;
  for (size_t i : a.todo) {
    const Command& c = cmds[i];
    int node = a.ask[i];
    if (node < 0 && !slot_owner_.empty()) node = slot_owner_[KeySlot(c.argv[1], c.len[1])];
    if (node >= 0) {
      by_node[node].push_back(i);
      continue;
    }
    a.failed[i] = Status::IOError("no master serves slot " + std::to_string(KeySlot(c.argv[1], c.len[1])));
    a.retry.push_back(i);
    a.reload = true;
  }
  return {by_node.begin(), by_node.end()};
}

std::vector<RedisCluster::Batch> RedisCluster::Send(Attempt& a, const std::vector<Command>& cmds) {
  // Every master gets its commands before any reply is read, so the masters
  // work side by side.
  std::vector<Batch> batches;
  for (auto& [node, list] : Route(a, cmds)) {
    Status err;
    redisContext* ctx = Conn(node, &err);
    if (ctx != nullptr) {
      for (size_t i : list) {
        if (a.ask[i] >= 0) redisAppendCommand(ctx, "ASKING");
        redisAppendCommandArgv(ctx, static_cast<int>(cmds[i].argv.size()), const_cast<const char**>(cmds[i].argv.data()),
                               cmds[i].len.data());
      }
      int flushed = 0;
      while (!flushed && redisBufferWrite(ctx, &flushed) == REDIS_OK) {
      }
      if (!flushed) {
        CountTimeout(ctx);
        err = Status::IOError(AddressOf(node) + ": " + ctx->errstr);
        Drop(node);
        ctx = nullptr;
      }
    }
    if (ctx == nullptr) {
      for (size_t i : list) a.failed[i] = err, a.retry.push_back(i);
      a.reload = true;
      continue;
    }
    batches.push_back({node, ctx, std::move(list)});
  }
  return batches;
}

void RedisCluster::Collect(Attempt& a, const std::vector<Command>& cmds, std::vector<Batch>& batches, const Done& done) {
  std::vector<RespReader> readers;
  readers.reserve(batches.size());
  for (const Batch& b : batches) readers.emplace_back(b.ctx->fd);
  // Reads the next reply of batch bi.
  auto read_one = [&](size_t bi) {
    Batch& b = batches[bi];
    RespReader& in = readers[bi];
    const size_t i = b.list[b.next++];
    RespReply reply;
    Status got = a.ask[i] >= 0 ? in.Next(nullptr, &reply) : Status::OK();  // ASKING's +OK
    a.ask[i] = -1;
    if (got.ok()) got = in.Next(cmds[i].landing, &reply);
    if (got.ok() && b.next == b.list.size() && in.buffered()) got = Status::IOError("bytes past the last reply");
    if (!got.ok()) {  // the connection is unusable: what it had not answered is tried again
      if (in.timed_out()) Count(&ConnectorCounters::timeouts);
      const Status lost = Status::IOError(AddressOf(b.node) + ": " + got.message());
      for (size_t j = b.next - 1; j < b.list.size(); ++j) a.failed[b.list[j]] = lost, a.retry.push_back(b.list[j]);
      b.next = b.list.size();
      Drop(b.node);
      a.reload = true;
      return;
    }
    if (reply.type == RespReply::kError) OnError(a, i, AddressOf(b.node), reply.text, done);
    else done(i, &reply, Status::OK());
  };
  // A reply is read from whichever master has one arriving, so that the
  // client does not sleep on one master while another's replies wait.
  std::vector<pollfd> fds;
  std::vector<size_t> of;
  for (;;) {
    fds.clear();
    of.clear();
    bool buffered = false;
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      if (batches[bi].next >= batches[bi].list.size()) continue;
      fds.push_back({batches[bi].ctx->fd, POLLIN, 0});
      of.push_back(bi);
      buffered = buffered || readers[bi].buffered();
    }
    if (fds.empty()) return;
    // Nothing arriving within the timeout: each reader then waits out its own.
    const bool waiting = buffered || ::poll(fds.data(), fds.size(), opt_.timeout_ms) <= 0;
    for (size_t k = 0; k < fds.size(); ++k)
      if (waiting ? readers[of[k]].buffered() || !buffered : fds[k].revents != 0) read_one(of[k]);
  }
}

void RedisCluster::OnError(Attempt& a, size_t i, const std::string& addr, const std::string& e, const Done& done) {
  int slot = 0, port = 0;
  std::string host;
  if (ParseRedirect(e, "MOVED", &slot, &host, &port)) {
    slot_owner_[slot] = NodeFor(host, port);
    Count(&ConnectorCounters::moved);
  } else if (ParseRedirect(e, "ASK", &slot, &host, &port)) {
    a.ask[i] = NodeFor(host, port);
    Count(&ConnectorCounters::ask);
  } else if (e.rfind("TRYAGAIN", 0) == 0 || e.rfind("CLUSTERDOWN", 0) == 0) {
    a.reload = true;  // the cluster is settling
  } else {
    done(i, nullptr, Status::IOError(addr + ": " + e));  // OOM and the like: no retry helps
    return;
  }
  a.failed[i] = Status::IOError(addr + ": " + e);
  a.retry.push_back(i);
}

void RedisCluster::Run(const std::vector<Command>& cmds, const Done& done) {
  Attempt a(cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) a.todo.push_back(i);
  for (int attempt = 0; attempt < opt_.attempts && !a.todo.empty(); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    a.retry.clear();
    a.reload = false;
    std::vector<Batch> batches = Send(a, cmds);
    Collect(a, cmds, batches, done);
    if (a.reload) {
      Count(&ConnectorCounters::slot_reloads);
      (void)LoadSlots();  // keeps the old map when no node answers
    }
    a.todo = std::move(a.retry);
  }
  for (size_t i : a.todo) done(i, nullptr, a.failed[i]);
}

std::vector<std::string> RedisCluster::masters() const {
  std::set<int> seen(slot_owner_.begin(), slot_owner_.end());
  std::vector<std::string> out;
  for (int n : seen)
    if (n >= 0) out.push_back(Address(nodes_[n].host, nodes_[n].port));
  return out;
}

void RedisCluster::RunOnMasters(const std::vector<std::string>& argv, const Done& done) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) args.push_back(a.c_str()), lens.push_back(a.size());
  const std::set<int> seen(slot_owner_.begin(), slot_owner_.end());
  size_t index = 0;
  for (int node : seen) {
    if (node < 0) continue;
    Status err;
    redisContext* ctx = Conn(node, &err);
    if (ctx == nullptr) {
      done(index++, nullptr, err);
      continue;
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(ctx, static_cast<int>(args.size()), args.data(), lens.data()));
    if (r == nullptr) {
      done(index++, nullptr, Status::IOError(Address(nodes_[node].host, nodes_[node].port) + ": " + ctx->errstr));
      Drop(node);
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      done(index++, nullptr, Status::IOError(AddressOf(node) + ": " + std::string(r->str, r->len)));
    } else {
      RespReply reply;
      reply.type = r->type == REDIS_REPLY_INTEGER ? RespReply::kInteger
                   : r->type == REDIS_REPLY_NIL   ? RespReply::kNil
                   : r->type == REDIS_REPLY_STATUS ? RespReply::kStatus
                                                   : RespReply::kString;
      reply.integer = r->integer;
      if (r->str != nullptr) reply.text.assign(r->str, r->len), reply.len = r->len;
      done(index++, &reply, Status::OK());
    }
    freeReplyObject(r);
  }
}

}  // namespace impress
