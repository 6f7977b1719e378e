// impress store stats|verify|compact|repair --store DIR [--remote URL]:
// inspect a chunk store (and what a remote tier holds of it), give back the
// space of chunks nothing reads any more, or salvage a damaged one.
#include <filesystem>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "codec/kv_codec.h"
#include "kvstore/compaction.h"
#include "kvstore/prefix_store.h"
#include "kvstore/store_log.h"
#include "kvstore/store_identity.h"
#include "kvstore/store_repair.h"
#include "model/model.h"
#include "remote/remote_store.h"
#include "select/probe_heads.h"
#include "store/chunk_store.h"

namespace impress {
namespace {

struct StoreCmdOptions {
  std::string action;
  std::string store;
  std::string remote;
  bool json = false;
  // repair: how the store was written, when its MANIFEST cannot say.
  std::string model;
  int chunk = 64;
  std::string kv_dtype = "float16";
  std::string kv_codec = "fp16";
  std::string probe_layout = "first";
};

// verify: every part of every chunk read and checked; the damaged ones listed.
int RunVerify(const StoreCmdOptions& o, ChunkStore& st, const std::vector<std::string>& committed) {
  uint64_t checked = 0;
  std::vector<DamagedChunk> damaged;
  Status v = st.VerifyEach(&checked, &damaged);
  if (!v.ok()) return Fail(v.WithContext("verify"));
  std::set<uint64_t> bad;
  for (const DamagedChunk& d : damaged) bad.insert(d.chunk_id);
  int64_t intact = 0;  // chunk ids all of whose layers are stored and hold
  for (uint64_t id : st.ChunkIds()) {
    bool whole = !bad.count(id);
    for (int l = 0; whole && l < st.geometry().layers; ++l) whole = st.Has(id, l);
    intact += whole;
  }
  if (o.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const DamagedChunk& d : damaged) list.push_back({{"chunk", d.chunk_id}, {"layer", d.layer}, {"why", d.why}});
    nlohmann::ordered_json j = {{"store", o.store}, {"records", committed.size()}, {"chunk_layers_checked", checked},
                                {"chunks", st.ChunkIds().size()}, {"chunks_intact", intact}, {"damaged", list}};
    PrintRecord(j, true);
  }
  if (!damaged.empty())
    return Fail(Status::Corruption("verify: " + std::to_string(damaged.size()) + " of " + std::to_string(checked) +
                                   " chunk layers are damaged (`store repair` drops them); the first: " +
                                   damaged.front().why));
  if (!o.json)
    std::printf("verify: %llu chunk layers in %zu records: every part matches its checksum\n",
                static_cast<unsigned long long>(checked), committed.size());
  return 0;
}

int RunRepair(const StoreCmdOptions& o) {
  RepairOptions ro;
  ro.dir = o.store;
  if (!o.model.empty()) {
    auto model = LoadModel(o.model, LoadOptions{"cpu", "auto"});
    if (!model.ok()) return Fail(model.status());
    PrefixStoreOptions po;
    po.chunk_tokens = o.chunk;
    po.kv_dtype = o.kv_dtype;
    auto codec = ParseKvCodec(o.kv_codec);
    if (!codec.ok()) return Fail(codec.status());
    po.kv_codec = *codec;
    auto layout = ParseProbeLayout(o.probe_layout);
    if (!layout.ok()) return Fail(layout.status());
    po.probe_layout = *layout;
    auto id = StoreIdentityFor(**model, po);
    if (!id.ok()) return Fail(id.status());
    ro.identity = *id;
  }
  auto r = RepairStore(ro);
  if (!r.ok()) return Fail(r.status().WithContext("repair"));
  nlohmann::ordered_json j = {
      {"store", o.store}, {"changed", r->changed}, {"manifest_written", r->manifest_written},
      {"records", r->records}, {"records_kept", r->records_kept}, {"records_malformed", r->records_malformed},
      {"log_bytes_skipped", r->log_bytes_skipped}, {"chunk_layers_checked", r->chunk_layers_checked},
      {"chunk_layers_damaged", r->chunk_layers_damaged}, {"chunks_intact", r->chunks_intact},
      {"chunks_kept", r->chunks_kept}, {"chunks_behind_damage", r->chunks_behind_damage},
      {"chunks_unreachable", r->chunks_unreachable}, {"prefixes_cut", r->prefixes_cut},
      {"copies_dropped", r->copies_dropped}, {"bytes_freed", r->bytes_freed}, {"first_damage", r->first_damage}};
  if (o.json) j["kept_chunk_ids"] = r->kept_ids;
  PrintRecord(j, o.json);
  return 0;
}

// What the cluster holds of the store's prefixes: the original chunks whose
// markers it has, and with `verify`, every part of every layer of them read
// and checked. A damaged part is the error; a missing one (evicted) is counted.
StatusOr<nlohmann::ordered_json> RemoteReport(const ChunkStore& st, const std::vector<std::string>& committed,
                                              const std::string& url, bool verify) {
  const ChunkGeometry& g = st.geometry();
  RadixTree tree(g.chunk_tokens);
  for (const auto& meta : committed) RETURN_IF_ERROR(ReplayRecord(meta, g.layers, &tree).WithContext(st.dir() + "/log"));
  ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> remote, RemoteStore::Connect(RemoteOptions{url}));
  const ContentKey root = StoreRootKey(st.fingerprint(), g.codec);
  std::map<uint64_t, std::pair<ContentKey, KvCodec>> found;  // chunk id -> key, codec
  int64_t chunks = 0;
  for (RadixTree::Node* n : tree.Nodes()) {
    const std::vector<int32_t> path = tree.PathTo(n);
    const std::vector<uint64_t> ids = tree.MatchPrefix(path).chunks;
    chunks += static_cast<int64_t>(n->chunks.size());
    std::vector<ContentKey> keys;
    const int64_t run = remote->FindChain(root, path, 0, ids.size(), g.chunk_tokens, g.codec, &keys);
    for (int64_t i = 0; i < run; ++i) found.emplace(ids[i], std::make_pair(keys[i], ChunkCodec(g.codec, i)));
  }
  nlohmann::ordered_json j = {{"url", url}, {"chunks", chunks}, {"chunks_in_cluster", found.size()}};
  if (verify) {
    const size_t kb = g.MaxPartBytes(0), vb = g.MaxPartBytes(1);
    std::vector<uint8_t> buf(kb + vb + g.MaxPartBytes(2));
    int64_t ok = 0, missing = 0;
    for (const auto& [id, named] : found) {
      std::vector<RemoteStore::Read> reads(g.layers);
      for (int l = 0; l < g.layers; ++l) {
        reads[l].key = named.first, reads[l].codec = named.second, reads[l].layer = l;
        reads[l].parts = kKeys | kValues | kProbeKeys;
        reads[l].keys = buf.data(), reads[l].values = buf.data() + kb, reads[l].probe = buf.data() + kb + vb;
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
  if (o.action == "repair") return RunRepair(o);
  // stats, verify and compact read the store as it is: opening it must not
  // make an empty chunks.dat for a log whose chunks were in a deleted one.
  std::error_code ec;
  if (std::filesystem::file_size(o.store + "/log", ec) > 0 && !ec && !std::filesystem::exists(o.store + "/chunks.dat"))
    return Fail(Status::NotFound(o.store + "/chunks.dat is missing while the log lists chunks in it; nothing was "
                                 "created (run `impress store repair` to drop what it lost)"));
  std::vector<std::string> committed;
  auto s = ChunkStore::OpenExisting(o.store, &committed);
  if (!s.ok()) return Fail(s.status());
  ChunkStore& st = **s;
  const ChunkGeometry& g = st.geometry();
  if (o.action == "verify") {
    if (int rc = RunVerify(o, st, committed); rc != 0 || o.remote.empty()) return rc;
    auto r = RemoteReport(st, committed, o.remote, true);
    if (!r.ok()) return Fail(r.status().WithContext("verify"));
    std::printf("verify --remote: %lld of %lld chunks in the cluster, %lld chunk layers match their checksums, "
                "%lld missing (evicted)\n",
                static_cast<long long>((*r)["chunks_in_cluster"].get<int64_t>()), static_cast<long long>((*r)["chunks"].get<int64_t>()),
                static_cast<long long>((*r)["chunk_layers_verified"].get<int64_t>()),
                static_cast<long long>((*r)["chunk_layers_missing"].get<int64_t>()));
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
  const size_t part = g.KeyBytes() + g.ValueBytes() + g.ProbeBytes();
  nlohmann::ordered_json j = {
      {"store", o.store}, {"fingerprint", st.fingerprint()}, {"records", committed.size()},
      {"chunk_layers", st.chunk_count()}, {"stored_tokens", tokens}, {"chunk_tokens", g.chunk_tokens},
      {"layers", g.layers}, {"kv_heads", g.kv_heads}, {"head_dim", g.head_dim},
      {"probe_kv_heads", g.probe_kv_heads}, {"elem_bytes", g.elem_bytes}, {"codec", KvCodecName(g.codec)},
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
      "store",
      "A chunk store: stats, verify every checksum, compact (free the chunks of replaced reordered copies), or repair "
      "(keep what is whole, drop what is damaged)");
  cmd->add_option("action", o->action, "stats, verify, compact or repair")
      ->required()
      ->check(CLI::IsMember({"stats", "verify", "compact", "repair"}));
  cmd->add_option("--store", o->store, "chunk store directory")->required();
  cmd->add_option("--remote", o->remote,
                  "stats, verify: redis://HOST:PORT[,...], also report (verify: check) what the cluster holds of this store");
  cmd->add_flag("--json", o->json, "the report as JSON (repair's lists the kept chunk ids)");
  cmd->add_option("--model", o->model,
                  "repair: the model the store was written for, when its MANIFEST is missing or not its own");
  cmd->add_option("--chunk", o->chunk, "repair with --model: tokens per chunk the store was written with")
      ->check(PositiveNumber());
  cmd->add_option("--kv-dtype", o->kv_dtype, "repair with --model: the stored KV dtype")
      ->check(CLI::IsMember(KvDtypeNames()));
  cmd->add_option("--kv-codec", o->kv_codec, "repair with --model: how the store encodes chunk parts")
      ->check(CLI::IsMember(KvCodecNames()));
  cmd->add_option("--probe-layout", o->probe_layout, "repair with --model: first or spread");
  commands->push_back({cmd, [o] { return RunStore(*o); }});
}

}  // namespace impress
