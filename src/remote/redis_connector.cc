#include "remote/redis_connector.h"

#include <cstdlib>

namespace impress {
namespace {

RedisCluster::Command Cmd(std::initializer_list<const std::string*> args, Landing* landing = nullptr) {
  RedisCluster::Command c;
  for (const std::string* a : args) c.argv.push_back(a->data()), c.len.push_back(a->size());
  c.landing = landing;
  return c;
}

// The value of `name` in an INFO reply, or "".
std::string InfoField(const std::string& info, const std::string& name) {
  const size_t at = info.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  const size_t start = at + name.size() + 2, end = info.find_first_of("\r\n", start);
  return info.substr(start, end - start);
}

}  // namespace

StatusOr<std::unique_ptr<RedisConnector>> RedisConnector::Connect(const ConnectorOptions& opt) {
  std::unique_ptr<RedisConnector> c(new RedisConnector(opt));
  ASSIGN_OR_RETURN(c->seeds_, ParseRedisUrl(opt.url));
  auto first = c->Take();
  if (!first.ok()) return first.status().WithContext("--remote " + opt.url);
  c->Give(*std::move(first));
  return c;
}

StatusOr<std::unique_ptr<RedisCluster>> RedisConnector::Take() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  ClusterOptions o{seeds_, opt_.timeout_ms};
  o.counters = opt_.counters;
  return RedisCluster::Connect(o);
}

void RedisConnector::Give(std::unique_ptr<RedisCluster> c) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  idle_.push_back(std::move(c));
}

void RedisConnector::Get(std::vector<GetOp>* ops, const std::vector<std::string>& touch) {
  if (ops->empty() && touch.empty()) return;
  auto client = Take();
  if (!client.ok()) {
    for (GetOp& op : *ops) op.status = client.status();
    return;
  }
  const std::string get = "GET", touch_cmd = "TOUCH";
  std::vector<RedisCluster::Command> cmds;
  cmds.reserve(ops->size() + touch.size());
  for (GetOp& op : *ops) cmds.push_back(Cmd({&get, &op.key}, &op.into));
  for (const std::string& k : touch) cmds.push_back(Cmd({&touch_cmd, &k}));
  (*client)->Run(cmds, [&](size_t i, const RespReply* r, const Status& st) {
    if (i >= ops->size()) return;  // a touch: best effort
    GetOp& op = (*ops)[i];
    const size_t want = op.into.head_bytes + op.into.body_bytes;
    if (!st.ok()) op.status = st;
    else if (r->type == RespReply::kNil) op.status = Status::NotFound(op.key + ": not in the cluster");
    else if (r->type != RespReply::kString) op.status = Status::Corruption(op.key + ": not a string value");
    else if (!r->landed)
      op.status = Status::Corruption(op.key + ": " + std::to_string(r->len) + " bytes, expected " + std::to_string(want));
    else op.status = Status::OK();
  });
  Give(*std::move(client));
}

void RedisConnector::Set(std::vector<SetOp>* ops) {
  if (ops->empty()) return;
  auto client = Take();
  if (!client.ok()) {
    for (SetOp& op : *ops) op.status = client.status();
    return;
  }
  const std::string set = "SET";
  std::vector<RedisCluster::Command> cmds;
  cmds.reserve(ops->size());
  for (SetOp& op : *ops) cmds.push_back(Cmd({&set, &op.key, &op.value}));
  (*client)->Run(cmds, [&](size_t i, const RespReply*, const Status& st) { (*ops)[i].status = st; });
  Give(*std::move(client));
}

StatusOr<nlohmann::ordered_json> RedisConnector::Stats() {
  ASSIGN_OR_RETURN(std::unique_ptr<RedisCluster> client, Take());
  const std::vector<std::string> masters = client->masters();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& m : masters) out.push_back({{"master", m}});
  Status failed;
  client->RunOnMasters({"DBSIZE"}, [&](size_t i, const RespReply* r, const Status& st) {
    if (!st.ok()) failed = st;
    else out[i]["keys"] = r->integer;
  });
  client->RunOnMasters({"INFO"}, [&](size_t i, const RespReply* r, const Status& st) {
    if (!st.ok()) {
      failed = st;
      return;
    }
    const std::string info = "\n" + r->text;
    auto number = [&](const std::string& name) { return std::strtoll(InfoField(info, name).c_str(), nullptr, 10); };
    out[i]["used_memory"] = number("used_memory");
    out[i]["maxmemory"] = number("maxmemory");
    out[i]["maxmemory_policy"] = InfoField(info, "maxmemory_policy");
    out[i]["evicted_keys"] = number("evicted_keys");
  });
  Give(std::move(client));
  if (!failed.ok()) return failed;
  return out;
}

}  // namespace impress
