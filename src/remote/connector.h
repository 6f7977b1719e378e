// What the remote tier needs of a key-value service: batched get, set and
// touch on bytes. RemoteStore (remote_store.h) names, frames and checks the
// values; a connector only moves them. Redis Cluster is the one
// implementation (redis_connector.h); another service (an object store, a
// transfer engine) is one new file implementing this interface and one line
// in ConnectRemote.
//
// A connector is thread-safe. Faults are per-operation statuses, never
// crashes: NotFound (no such key), Corruption (a value of the wrong length
// or type), IOError (unreachable, timed out, refused).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace impress {

// Where one value lands: its first head_bytes (at most 8: a frame's header)
// in `head`, the rest in `body`, and only when the value is exactly
// head_bytes + body_bytes long. The connector takes the CRC-32C of the body
// as the bytes land, so the caller need not read them again.
struct Landing {
  uint8_t head[8] = {};
  size_t head_bytes = 0;
  void* body = nullptr;
  size_t body_bytes = 0;
  uint32_t body_crc = 0;  // out: CRC-32C of the body's bytes
};

struct GetOp {
  std::string key;
  Landing into;
  Status status;  // out
};

struct SetOp {
  std::string key;
  std::string value;
  Status status;  // out
};

// What the service did to the connector: added up over all its connections.
struct ConnectorCounters {
  std::atomic<int64_t> moved{0};         // MOVED redirects (the slot map was stale)
  std::atomic<int64_t> ask{0};           // ASK redirects (a slot being migrated)
  std::atomic<int64_t> slot_reloads{0};  // slot maps read again after a redirect, a lost node or CLUSTERDOWN
  std::atomic<int64_t> reconnects{0};    // connections made again to a node that had one
  std::atomic<int64_t> timeouts{0};      // connects and replies that ran past the timeout
};

struct ConnectorOptions {
  std::string url;                          // the service, e.g. redis://HOST:PORT[,HOST:PORT...]
  int timeout_ms = 1000;                    // connect and per-reply timeout
  ConnectorCounters* counters = nullptr;    // where to count, or nowhere; outlives the connector
};

class Connector {
 public:
  virtual ~Connector() = default;
  // Reads every op's value into its landing in one batched round, and
  // refreshes the recency of the `touch` keys in the same round (best effort:
  // a touch that fails is not reported).
  virtual void Get(std::vector<GetOp>* ops, const std::vector<std::string>& touch) = 0;
  // Writes every op in one batched round.
  virtual void Set(std::vector<SetOp>* ops) = 0;
  // Per server: address, keys, used and max memory, eviction policy, evicted keys.
  virtual StatusOr<nlohmann::ordered_json> Stats() = 0;
};

// The connector for `opt.url`'s scheme, connected. Errors (one line, naming
// the address): an unknown scheme, a malformed address, nothing reachable.
StatusOr<std::unique_ptr<Connector>> ConnectRemote(const ConnectorOptions& opt);

}  // namespace impress
