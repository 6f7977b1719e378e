// impress store stats|verify|compact --store DIR [--remote URL]: inspect a
// chunk store (and what a remote tier holds of it), or give back the space of
// chunks nothing reads any more.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/compaction.h"
#include "engine/store_log.h"
#include "remote/remote_store.h"
#include "store/chunk_store.h"

namespace impress {
namespace {

struct StoreCmdOptions {
  std::string action;
  std::string store;
  std::string remote;
  bool json = false;
};

// What the cluster holds of the store's prefixes: the original chunks whose
// markers it has, and with `verify`, every part of every layer of them read
// and checked. A damaged part is the error; a missing one (evicted) is counted.
StatusOr<nlohmann::ordered_json> RemoteReport(const ChunkStore& st, const std::vector<std::string>& committed,
                                              const std::string& url, bool verify) {
  const ChunkGeometry& g = st.geometry();
  RadixTree tree(g.chunk_tokens);
  for (const auto& meta : committed) RETURN_IF_ERROR(ReplayRecord(meta, g.layers, &tree).WithContext(st.dir() + "/log"));
  ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> remote, RemoteStore::Connect(RemoteOptions{url}));
  const ContentKey root = RootKey(st.fingerprint());
  std::map<uint64_t, ContentKey> found;  // chunk id -> key
  int64_t chunks = 0;
  for (RadixTree::Node* n : tree.Nodes()) {
    const std::vector<int32_t> path = tree.PathTo(n);
    const std::vector<uint64_t> ids = tree.MatchPrefix(path).chunks;
    chunks += static_cast<int64_t>(n->chunks.size());
    std::vector<ContentKey> keys;
    const int64_t run = remote->FindChain(root, path, 0, ids.size(), g.chunk_tokens, &keys);
    for (int64_t i = 0; i < run; ++i) found.emplace(ids[i], keys[i]);
  }
  nlohmann::ordered_json j = {{"url", url}, {"chunks", chunks}, {"chunks_in_cluster", found.size()}};
  if (verify) {
    std::vector<uint8_t> buf(2 * g.KeyBytes() + g.ProbeBytes());
    int64_t ok = 0, missing = 0;
    for (const auto& [id, key] : found) {
      std::vector<RemoteStore::Read> reads(g.layers);
      for (int l = 0; l < g.layers; ++l) {
        reads[l].key = key, reads[l].layer = l, reads[l].parts = kKeys | kValues | kProbeKeys;
        reads[l].keys = buf.data(), reads[l].values = buf.data() + g.KeyBytes(), reads[l].probe = buf.data() + 2 * g.KeyBytes();
      }
      remote->ReadParts(g, &reads);  // layer by layer into one buffer: only the checks matter here
      for (const auto& r : reads) {
        if (r.status.IsCorruption()) return r.status.WithContext("chunk " + std::to_string(id));
        if (r.status.IsNotFound()) ++missing;
        else if (!r.status.ok()) return r.status;
        else ++ok;
      }
    }
    j["chunk_layers_verified"] = ok;
    j["chunk_layers_missing"] = missing;
  }
  ASSIGN_OR_RETURN(j["masters"], remote->ClusterStats());
  return j;
}

int RunStore(const StoreCmdOptions& o) {
  std::vector<std::string> committed;
  auto s = ChunkStore::OpenExisting(o.store, &committed);
  if (!s.ok()) return Fail(s.status());
  ChunkStore& st = **s;
  const ChunkGeometry& g = st.geometry();
  if (o.action == "verify") {
    uint64_t checked = 0;
    Status v = st.Verify(&checked);
    if (!v.ok()) return Fail(v.WithContext("verify"));
    std::printf("verify: %llu chunk layers in %zu records: every part matches its checksum\n",
                static_cast<unsigned long long>(checked), committed.size());
    if (!o.remote.empty()) {
      auto r = RemoteReport(st, committed, o.remote, true);
      if (!r.ok()) return Fail(r.status().WithContext("verify"));
      std::printf("verify --remote: %lld of %lld chunks in the cluster, %lld chunk layers match their checksums, "
                  "%lld missing (evicted)\n",
                  static_cast<long long>((*r)["chunks_in_cluster"].get<int64_t>()), static_cast<long long>((*r)["chunks"].get<int64_t>()),
                  static_cast<long long>((*r)["chunk_layers_verified"].get<int64_t>()),
                  static_cast<long long>((*r)["chunk_layers_missing"].get<int64_t>()));
    }
    return 0;
  }
  if (o.action == "compact") {
    auto c = CompactStore(&st, committed);
    if (!c.ok()) return Fail(c.status().WithContext("compact"));
    nlohmann::ordered_json j = {{"store", o.store}, {"chunks_live", c->chunks_live},
                                {"chunks_freed", c->chunks_freed}, {"chunk_layers_freed", c->freed.chunk_layers},
                                {"bytes_freed", c->freed.bytes}, {"allocated_bytes_before", c->allocated_before},
                                {"allocated_bytes_after", c->allocated_after}, {"log_bytes_before", c->log_before},
                                {"log_bytes_after", c->log_after}};
    PrintRecord(j, o.json);
    return 0;
  }
  size_t tokens = 0;
  for (const auto& meta : committed) tokens += nlohmann::json::parse(meta)["tokens"].size();
  const size_t part = g.KeyBytes() * 2 + g.ProbeBytes();
  nlohmann::ordered_json j = {
      {"store", o.store}, {"fingerprint", st.fingerprint()}, {"records", committed.size()},
      {"chunk_layers", st.chunk_count()}, {"stored_tokens", tokens}, {"chunk_tokens", g.chunk_tokens},
      {"layers", g.layers}, {"kv_heads", g.kv_heads}, {"head_dim", g.head_dim},
      {"probe_kv_heads", g.probe_kv_heads}, {"elem_bytes", g.elem_bytes},
      {"data_bytes", st.data_bytes()}, {"allocated_bytes", st.AllocatedBytes()},
      {"payload_bytes", st.chunk_count() * part},
      {"probe_copy_share", g.layers ? double(g.ProbeBytes()) / double(2 * g.KeyBytes()) : 0.0}};
  if (!o.remote.empty()) {
    auto r = RemoteReport(st, committed, o.remote, false);
    if (!r.ok()) return Fail(r.status().WithContext("stats"));
    j["remote"] = *r;
  }
  PrintRecord(j, o.json);
  return 0;
}

}  // namespace

void AddStoreCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<StoreCmdOptions>();
  CLI::App* cmd = app.add_subcommand(
      "store", "A chunk store: stats, verify every checksum, or compact (free the chunks of replaced reordered copies)");
  cmd->add_option("action", o->action, "stats, verify or compact")
      ->required()
      ->check(CLI::IsMember({"stats", "verify", "compact"}));
  cmd->add_option("--store", o->store, "chunk store directory")->required();
  cmd->add_option("--remote", o->remote,
                  "stats, verify: redis://HOST:PORT[,...], also report (verify: check) what the cluster holds of this store");
  cmd->add_flag("--json", o->json, "stats or compact's report as JSON");
  commands->push_back({cmd, [o] { return RunStore(*o); }});
}

}  // namespace impress
