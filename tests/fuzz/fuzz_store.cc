// Fuzz target: a store directory (docs/store.md, "On disk"). The first byte
// picks what the rest is:
//   0: the log, raw bytes (torn tails, bad checksums, damage);
//   1: the log as JSON payloads, one per line, each framed with a valid
//      header and checksum (what a buggy writer or a crafted file could
//      commit);
//   2: the MANIFEST.
// Opening must refuse the store with an error or give one whose records
// replay into a radix tree (or are refused) and whose chunks verify (or fail
// verification) without crashing; an installed reordered copy's mapping
// must be a permutation of its node's tokens; and compacting it (freeing what
// no node reaches, rewriting the log) must leave a store that reopens.
// Repairing the same files (on a copy) must refuse, or leave a store that
// opens, replays, verifies and that a second repair leaves unchanged.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/radix_tree.h"
#include "kvstore/compaction.h"
#include "kvstore/store_log.h"
#include "kvstore/store_repair.h"
#include "fuzz_input.h"
#include "store/chunk_store.h"

namespace {

const char kManifest[] =
    "{\"format\":1,\"fingerprint\":\"fuzz\",\"geometry\":{\"chunk_tokens\":2,\"layers\":2,\"kv_heads\":1,"
    "\"head_dim\":4,\"probe_kv_heads\":1,\"elem_bytes\":2}}\n";

void CheckCopies(const impress::RadixTree& tree, int layers) {
  for (const impress::RadixTree::Node* n : tree.Nodes()) {
    if (!n->reordered) continue;
    if (n->reordered->order.size() != static_cast<size_t>(layers)) __builtin_trap();
    for (const auto& order : n->reordered->order) {
      std::vector<bool> seen(n->tokens.size(), false);
      if (order.size() != n->tokens.size()) __builtin_trap();
      for (int32_t t : order) {
        if (t < 0 || static_cast<size_t>(t) >= seen.size() || seen[t]) __builtin_trap();
        seen[t] = true;
      }
    }
  }
}

// What `impress store repair` does with the files in `dir`, on a copy.
void CheckRepair(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string copy = dir + ".repair";
  fs::remove_all(copy);
  fs::copy(dir, copy, fs::copy_options::recursive);
  auto r = impress::RepairStore({copy, std::nullopt, nullptr});
  if (!r.ok()) return;
  {
    std::vector<std::string> kept;
    auto store = impress::ChunkStore::OpenExisting(copy, &kept);
    if (!store.ok()) __builtin_trap();
    const int layers = (*store)->geometry().layers;
    impress::RadixTree tree((*store)->geometry().chunk_tokens);
    for (const std::string& meta : kept)
      if (!impress::ReplayRecord(meta, layers, &tree).ok()) __builtin_trap();
    CheckCopies(tree, layers);
    uint64_t checked = 0;
    if (!(*store)->Verify(&checked).ok()) __builtin_trap();
  }
  auto again = impress::RepairStore({copy, std::nullopt, nullptr});
  if (!again.ok() || again->changed || again->kept_ids != r->kept_ids) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  if (size == 0) return 0;
  const std::string dir = impress::fuzz::ScratchDir() + "/store";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint8_t mode = data[0] % 3;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string manifest = kManifest, log;
  if (mode == 0) log = rest;
  if (mode == 1) {
    size_t at = 0;
    while (at <= rest.size()) {
      size_t nl = rest.find('\n', at);
      if (nl == std::string::npos) nl = rest.size();
      log += impress::LogRecord(rest.substr(at, nl - at));
      at = nl + 1;
    }
  }
  if (mode == 2) manifest = rest;
  impress::fuzz::WriteFile(dir + "/MANIFEST", reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size());
  impress::fuzz::WriteFile(dir + "/log", reinterpret_cast<const uint8_t*>(log.data()), log.size());

  CheckRepair(dir);
  if (mode == 2) {  // what `impress run` does first: open with the model's geometry
    impress::StoreOptions opt;
    opt.geometry = impress::ChunkGeometry{2, 2, 1, 4, 1, 2};
    opt.fingerprint = "fuzz";
    opt.create_if_missing = false;
    opt.io_threads = 1;
    (void)impress::ChunkStore::Open(dir, opt, nullptr);
  }
  std::vector<std::string> committed;
  auto store = impress::ChunkStore::OpenExisting(dir, &committed);
  if (!store.ok()) return 0;
  const int layers = (*store)->geometry().layers;
  impress::RadixTree tree((*store)->geometry().chunk_tokens);
  for (const std::string& meta : committed)
    if (!impress::ReplayRecord(meta, layers, &tree).ok()) return 0;
  CheckCopies(tree, layers);
  (void)impress::LiveChunks(tree);
  uint64_t checked = 0;
  (void)(*store)->Verify(&checked);
  // What `impress store compact` does: free what the tree does not reach, punch its holes and
  // rewrite the log; the store must reopen. (Which nodes survive is not checked: a crafted
  // log can name in a record's metadata other chunks than the record stores, which the
  // store cannot see below the tree; the writer never does.)
  if (!impress::CompactStore(store->get(), committed).ok()) return 0;
  store->reset();  // closes the store and its lock
  std::vector<std::string> again;
  if (!impress::ChunkStore::OpenExisting(dir, &again).ok()) __builtin_trap();
  return 0;
}
