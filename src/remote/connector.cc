#include "remote/connector.h"

#include "remote/redis_connector.h"

namespace impress {

StatusOr<std::unique_ptr<Connector>> ConnectRemote(const ConnectorOptions& opt) {
  const size_t scheme = opt.url.find("://");
  const std::string name = scheme == std::string::npos ? "redis" : opt.url.substr(0, scheme);
  if (name == "redis") {
    ASSIGN_OR_RETURN(std::unique_ptr<RedisConnector> c, RedisConnector::Connect(opt));
    return std::unique_ptr<Connector>(std::move(c));
  }
  return Status::InvalidArgument("--remote " + opt.url + ": unknown scheme '" + name + "' (known: redis)");
}

}  // namespace impress
