// The Connector on a Redis Cluster: a pool of RedisCluster clients (one per
// calling thread at a time), GET/SET/TOUCH pipelined per master.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote/connector.h"
#include "remote/redis_cluster.h"

namespace impress {

class RedisConnector : public Connector {
 public:
  // Connects one client (the slot map is read then). Errors name the address.
  static StatusOr<std::unique_ptr<RedisConnector>> Connect(const ConnectorOptions& opt);

  void Get(std::vector<GetOp>* ops, const std::vector<std::string>& touch) override;
  void Set(std::vector<SetOp>* ops) override;
  StatusOr<nlohmann::ordered_json> Stats() override;

 private:
  explicit RedisConnector(const ConnectorOptions& opt) : opt_(opt) {}
  // A client for this call, from the pool or new; Give returns it.
  StatusOr<std::unique_ptr<RedisCluster>> Take();
  void Give(std::unique_ptr<RedisCluster> c);

  ConnectorOptions opt_;
  std::vector<std::string> seeds_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<RedisCluster>> idle_;  // guarded by pool_mu_
};

}  // namespace impress
