// impress store stats|verify|compact --store DIR: inspect a chunk store, or
// give back the space of chunks nothing reads any more.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/compaction.h"
#include "store/chunk_store.h"

namespace impress {
namespace {

struct StoreCmdOptions {
  std::string action;
  std::string store;
  bool json = false;
};

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
  cmd->add_flag("--json", o->json, "stats or compact's report as JSON");
  commands->push_back({cmd, [o] { return RunStore(*o); }});
}

}  // namespace impress
