// A thin Redis Cluster client: commands are routed to the master that owns
// their key's hash slot (the key's {hash tag} when it has one), sent
// pipelined with one connection per master, and retried on MOVED and ASK
// redirects and on a lost connection after reloading the slot map. hiredis
// connects, formats commands and reads the slot map; the replies of Run are
// read by RespReader, so that values land in the caller's buffers.
//
// Not thread-safe: one client per thread (RedisConnector keeps a pool).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "remote/connector.h"
#include "remote/resp_reader.h"

struct redisContext;
struct redisReply;

namespace impress {

struct ClusterOptions {
  std::vector<std::string> seeds;  // host:port of any nodes; the slot map is read from the first that answers
  int timeout_ms = 1000;           // connect and per-reply timeout
  int attempts = 3;                // tries per command (redirects and reconnects included)
  ConnectorCounters* counters = nullptr;  // where to count, or nowhere; outlives the client
};

// "redis://h1:p1,h2:p2" (or without the scheme) -> {"h1:p1", "h2:p2"}. Errors name `url`.
StatusOr<std::vector<std::string>> ParseRedisUrl(const std::string& url);

// CRC16 hash slot of `key` (0..16383), as Redis Cluster computes it.
uint16_t KeySlot(const char* key, size_t len);

class RedisCluster {
 public:
  // One command: its arguments, the key at argv[1], and where a string
  // reply of the landing's size lands (or nowhere). The pointers must stay
  // valid for the call that runs it.
  struct Command {
    std::vector<const char*> argv;
    std::vector<size_t> len;
    Landing* landing = nullptr;
  };
  // Called once per command with its reply (never an error reply: those are
  // `status`), or with a null reply and the failure after the last attempt.
  using Done = std::function<void(size_t index, const RespReply* reply, const Status& status)>;

  // Connects to the seeds and loads the slot map. Errors: no seed answers
  // (the message names every address tried), or a node not in cluster mode.
  static StatusOr<std::unique_ptr<RedisCluster>> Connect(const ClusterOptions& opt);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // Runs every command, pipelined per master; `done` sees each exactly once.
  void Run(const std::vector<Command>& cmds, const Done& done);
  // Runs the command `argv` on every master (INFO, DBSIZE, FLUSHALL); `done`
  // gets the master's address as its index into masters().
  void RunOnMasters(const std::vector<std::string>& argv, const Done& done);
  // host:port of each master in the slot map.
  std::vector<std::string> masters() const;

 private:
  struct Node {
    std::string host;
    int port = 0;
    redisContext* ctx = nullptr;  // null until first used, and after a failure
    bool connected_before = false;
  };
  explicit RedisCluster(const ClusterOptions& opt) : opt_(opt) {}
  Status LoadSlots();                        // from any node that answers
  int NodeFor(const std::string& host, int port);  // index in nodes_, added when new
  redisContext* Conn(int node, Status* error);
  void Drop(int node);
  // One attempt's commands for one master, and how far its replies are read.
  struct Batch {
    int node;
    redisContext* ctx;
    std::vector<size_t> list;  // indexes into the commands
    size_t next = 0;
  };
  // The state of one Run across its attempts.
  struct Attempt;
  // Groups `a`'s commands by the master to ask; those with none wait for a reload.
  std::vector<std::pair<int, std::vector<size_t>>> Route(Attempt& a, const std::vector<Command>& cmds);
  // Sends each master its commands; a master that cannot take them fails them.
  std::vector<Batch> Send(Attempt& a, const std::vector<Command>& cmds);
  // Reads one reply per master in turn until every batch is answered.
  void Collect(Attempt& a, const std::vector<Command>& cmds, std::vector<Batch>& batches, const Done& done);
  // An error reply to command i: a redirect or a settling cluster is tried again.
  void OnError(Attempt& a, size_t i, const std::string& addr, const std::string& error, const Done& done);
  std::string AddressOf(int node) const;
  // Counts `what` (a ConnectorCounters member) when counting.
  void Count(std::atomic<int64_t> ConnectorCounters::*what) {
    if (opt_.counters != nullptr) (opt_.counters->*what)++;
  }
  // Counts a timeout when `ctx`'s error is one.
  void CountTimeout(const redisContext* ctx);

  ClusterOptions opt_;
  std::vector<Node> nodes_;
  std::vector<int> slot_owner_;  // slot -> index in nodes_, -1 when no master serves it
};

}  // namespace impress
