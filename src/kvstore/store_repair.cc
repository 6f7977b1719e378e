#include "kvstore/store_repair.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cache/radix_tree.h"
#include "common/json_get.h"
#include "kvstore/store_log.h"
#include "store/chunk_layout.h"
#include "store/log_format.h"

namespace impress {
namespace {

using nlohmann::json;
using LayerKey = std::pair<uint64_t, int>;  // (chunk id, layer)

// The store as the salvaged log describes it.
struct Salvage {
  StoreIdentity id;
  SalvagedLog log;
  std::map<LayerKey, ChunkLocation> index;  // every stored (chunk, layer), frees applied
  std::set<LayerKey> damaged;
  std::set<uint64_t> intact;                // ids whose every layer is stored and holds
  int64_t checksum_failures = 0;            // damaged layers that lie in the file but fail a checksum
};

// A record of the new log.
struct Planned {
  std::string meta;
  std::vector<StoredChunk> chunks;
  std::vector<uint64_t> copy;  // a reordered copy's chunk ids (kept only while installed)
};

void NoteDamage(RepairReport* r, const std::string& what) {
  if (r->first_damage.empty()) r->first_damage = what;
}

// The identity to repair under; *write when the MANIFEST must be (re)written.
StatusOr<StoreIdentity> Identity(Env* env, const RepairOptions& opt, bool* write, RepairReport* r) {
  StatusOr<StoreIdentity> have = ReadManifest(env, opt.dir);
  if (!opt.identity) {
    if (!have.ok())
      return have.status().WithContext("repair needs to know how the store was written: pass --model (and --chunk, "
                                       "--kv-dtype, --probe-layout as the run that wrote it had them)");
    return *have;
  }
  RETURN_IF_ERROR(CheckGeometry(opt.dir, opt.identity->geometry));
  *write = !have.ok() || ManifestText(*have) != ManifestText(*opt.identity);
  if (*write) NoteDamage(r, have.ok() ? opt.dir + "/MANIFEST: not the one the store was written with"
                                      : have.status().message());
  return *opt.identity;
}

// The whole file, or "" when it is missing.
StatusOr<std::string> ReadIfThere(Env* env, const std::string& path) {
  StatusOr<std::string> s = ReadFileToString(env, path);
  if (s.status().IsNotFound()) return std::string();
  return s;
}

void IndexChunks(Salvage* s) {
  for (const LogEntry& e : s->log.entries) {
    if (e.free) {
      for (uint64_t id : e.freed)
        for (auto it = s->index.lower_bound({id, 0}); it != s->index.end() && it->first.first == id;)
          it = s->index.erase(it);
      continue;
    }
    for (const StoredChunk& c : e.chunks) s->index[{c.id, c.layer}] = c.loc;
  }
}

// Reads and checks every indexed (chunk, layer); fills damaged and intact.
Status CheckChunks(Env* env, const std::string& dir, Salvage* s, RepairReport* r) {
  const ChunkGeometry& g = s->id.geometry;
  std::unique_ptr<File> data;
  if (!s->index.empty() && env->Exists(dir + "/chunks.dat")) {  // without it every chunk is missing
    ASSIGN_OR_RETURN(data, env->Open(dir + "/chunks.dat", OpenMode::kDirectRead));
  }
  // Two chunks sharing bytes: only damage makes them; the later one is dropped.
  std::multimap<uint64_t, LayerKey> by_offset;
  for (const auto& [key, loc] : s->index) by_offset.emplace(loc.offset, key);
  uint64_t end = 0;
  for (const auto& [off, key] : by_offset) {
    if (off < end) {
      s->damaged.insert(key);
      NoteDamage(r, dir + "/chunks.dat: chunk " + std::to_string(key.first) + " layer " + std::to_string(key.second) +
                        " shares bytes with another");
    }
    end = std::max(end, off + g.RecordBytes(s->index.at(key).codec));
  }
  uint64_t size = 0;
  if (data) {
    ASSIGN_OR_RETURN(size, data->Size());
  }
  std::vector<uint8_t> buf(g.MaxPartBytes(0) + g.MaxPartBytes(1) + g.MaxPartBytes(2) + g.DigestBytes());
  uint8_t* const b = buf.data();
  void* const dst[kChunkParts] = {b, b + g.MaxPartBytes(0), b + g.MaxPartBytes(0) + g.MaxPartBytes(1),
                                  b + g.MaxPartBytes(0) + g.MaxPartBytes(1) + g.MaxPartBytes(2)};
  const uint8_t every = kKeys | kValues | kProbeKeys | (g.digests ? kDigest : 0);
  for (const auto& [key, loc] : s->index) {
    ++r->chunk_layers_checked;
    if (s->damaged.count(key)) continue;
    const std::string what = dir + "/chunks.dat: chunk " + std::to_string(key.first) + " layer " + std::to_string(key.second);
    Status st = data ? ReadChunkParts(data.get(), g, loc, every, dst, what).status()
                     : Status::Corruption(what + ": chunks.dat is missing");
    if (st.IsCorruption()) {
      s->damaged.insert(key);
      if (loc.offset + g.RecordBytes(loc.codec) <= size) ++s->checksum_failures;
      NoteDamage(r, st.message());
    } else if (!st.ok()) {
      return st;
    }
  }
  r->chunk_layers_damaged = static_cast<int64_t>(s->damaged.size());
  std::map<uint64_t, int> good_layers;
  for (const auto& [key, loc] : s->index)
    if (!s->damaged.count(key)) ++good_layers[key.first];
  for (const auto& [id, n] : good_layers)
    if (n == g.layers) s->intact.insert(id);
  r->chunks_intact = static_cast<int64_t>(s->intact.size());
  return Status::OK();
}

// Replays the salvaged records into a radix tree, keeping what is intact
// and consistent, and plans the new log.
class Planner {
 public:
  Planner(const Salvage& s, const std::string& dir, RepairReport* r)
      : s_(s), dir_(dir), r_(r), tree_(s.id.geometry.chunk_tokens) {}

  std::vector<Planned> Run(size_t log_size) {
    size_t end = 0;  // of the previous whole record
    for (const LogEntry& e : s_.log.entries) {
      if (e.pos != end) Lose("bytes " + std::to_string(end) + " to " + std::to_string(e.pos) + " are no whole record");
      end = e.pos + e.len;
      if (e.free) continue;
      const json meta = json::parse(e.meta, nullptr, false);
      try {
        if (!meta.is_object()) throw std::invalid_argument("its metadata is not a JSON object");
        if (meta.contains("fill")) Fill(e);
        else if (meta.contains("reorder")) Reorder(meta.at("reorder"), e);
        else Insert(meta, e);
      } catch (const std::exception& ex) {  // json's key and type errors, GetInteger's range errors
        Lose("the record at byte " + std::to_string(e.pos) + " is malformed (" + ex.what() + ")");
      }
    }
    if (end != log_size)
      NoteDamage(r_, dir_ + "/log: bytes " + std::to_string(end) + " to " + std::to_string(log_size) +
                         " are no whole record");
    return Keep();
  }

 private:
  bool Intact(uint64_t id) const { return s_.intact.count(id) > 0; }
  bool Stored(uint64_t id) const {
    auto it = s_.index.lower_bound({id, 0});
    return it != s_.index.end() && it->first.first == id;
  }
  // Records after this point may depend on what was lost.
  void Lose(const std::string& what) {
    lost_ = true;
    NoteDamage(r_, dir_ + "/log: " + what);
  }

  void Insert(const json& meta, const LogEntry& e) {
    const size_t c = static_cast<size_t>(s_.id.geometry.chunk_tokens);
    std::vector<int32_t> tokens = GetIntegers<int32_t>(meta.at("tokens"));
    if (tokens.size() % c != 0) throw std::invalid_argument("its prefix is not whole chunks");
    std::set<uint64_t> ids;
    for (const StoredChunk& ch : e.chunks) ids.insert(ch.id);
    if (ids.empty()) {  // an adoption: the data is in a backend below, the ids follow the tree's shape
      if (lost_) return Cut(ids, 0, "an adoption after a lost record");  // the next run adopts it again
      const uint64_t first = GetInteger<uint64_t>(meta.at("first_chunk"));
      tree_.Insert(tokens, first);
      planned_.push_back({e.meta, {}, {}});
      return;
    }
    const uint64_t first = *ids.begin();
    const size_t k = ids.size();
    const bool named_first = meta.contains("first_chunk");
    if (*ids.rbegin() != first + k - 1 || (named_first && GetInteger<uint64_t>(meta.at("first_chunk")) != first))
      throw std::invalid_argument("its chunk ids do not follow one another from first_chunk");
    const std::string record = "the record at byte " + std::to_string(e.pos);
    const size_t matched = tree_.MatchPrefix(tokens).chunks.size();
    if (matched + k != tokens.size() / c) return Cut(ids, 0, record + " stores a prefix that runs through a lost chunk");
    size_t keep = 0;
    while (keep < k && Intact(first + keep)) ++keep;
    if (keep < k) Cut(ids, keep, record + " loses chunk " + std::to_string(first + keep) + " and what follows it");
    if (keep == 0) return;
    tokens.resize((matched + keep) * c);
    tree_.Insert(tokens, first);
    std::vector<StoredChunk> chunks;
    for (const StoredChunk& ch : e.chunks)
      if (ch.id < first + keep) chunks.push_back(ch);
    planned_.push_back({InsertRecord(tokens, first), std::move(chunks), {}});
  }

  // Drops the ids of `ids` from the `keep`-th on; the intact ones among them were lost behind damage.
  void Cut(const std::set<uint64_t>& ids, size_t keep, const std::string& why) {
    ++r_->prefixes_cut;
    size_t i = 0;
    for (uint64_t id : ids)
      if (i++ >= keep && Intact(id)) ++r_->chunks_behind_damage;
    Lose(why);
  }

  void Reorder(const json& ro, const LogEntry& e) {
    const uint64_t first = GetInteger<uint64_t>(ro.at("first_chunk"));
    const std::vector<uint64_t> source = GetIntegers<uint64_t>(ro.at("source"));
    tree_.AdvanceChunkIds(first + source.size());
    auto copy = std::make_shared<ReorderedChunks>();
    bool intact = true, stored = false;
    for (size_t i = 0; i < source.size(); ++i) {
      copy->chunks.push_back(first + i);
      intact = intact && Intact(first + i);
      stored = stored || Stored(first + i);
    }
    std::set<uint64_t> named;
    for (const StoredChunk& ch : e.chunks) named.insert(ch.id);
    if (named != std::set<uint64_t>(copy->chunks.begin(), copy->chunks.end()))
      throw std::invalid_argument("its chunks are not its copy's");
    if (!intact) {  // freed (replaced by a later copy) is no damage; a stored copy that fails is
      if (stored) {
        ++r_->copies_dropped;
        NoteDamage(r_, dir_ + "/log: the reordered copy at byte " + std::to_string(e.pos) + " has a damaged chunk");
      }
      return;
    }
    if (!ro.at("order").is_array()) throw std::invalid_argument("order is not an array");
    for (const auto& o : ro.at("order")) copy->order.push_back(GetIntegers<int32_t>(o));
    const std::vector<uint64_t> ids = copy->chunks;
    if (InstallCopy(GetIntegers<int32_t>(ro.at("path")), source, std::move(copy), s_.id.geometry.layers, &tree_))
      planned_.push_back({e.meta, e.chunks, ids});
  }

  void Fill(const LogEntry& e) {
    std::vector<StoredChunk> chunks;
    for (const StoredChunk& ch : e.chunks) {
      if (Intact(ch.id)) chunks.push_back(ch);
      else NoteDamage(r_, dir_ + "/log: kept data of adopted chunk " + std::to_string(ch.id) + " is damaged");
    }
    if (!chunks.empty()) planned_.push_back({e.meta, std::move(chunks), {}});
  }

  // What the final tree reads: copies still installed, chunks still named.
  std::vector<Planned> Keep() {
    const std::set<uint64_t> live = LiveChunks(tree_);
    std::vector<Planned> out;
    for (Planned& p : planned_) {
      const bool copy_live = std::all_of(p.copy.begin(), p.copy.end(), [&](uint64_t id) { return live.count(id) > 0; });
      if (!copy_live) continue;
      std::vector<StoredChunk> chunks;
      for (const StoredChunk& ch : p.chunks)
        if (live.count(ch.id)) chunks.push_back(ch);
      if (!p.chunks.empty() && chunks.empty()) continue;
      p.chunks = std::move(chunks);
      out.push_back(std::move(p));
    }
    return out;
  }

  const Salvage& s_;
  const std::string& dir_;
  RepairReport* r_;
  RadixTree tree_;
  bool lost_ = false;  // a record before this one was lost or cut
  std::vector<Planned> planned_;
};

// The new MANIFEST (when it changes), then the new log, each atomically;
// then the space of every stored chunk the new log does not keep.
Status WriteRepair(Env* env, const std::string& dir, const Salvage& s, const std::vector<Planned>& plan,
                   bool write_manifest, RepairReport* r) {
  if (write_manifest) {
    RETURN_IF_ERROR(WriteFileAtomically(env, dir + "/MANIFEST", ManifestText(s.id)));
    r->manifest_written = true;
  }
  std::string log;
  for (const Planned& p : plan) log += LogRecord(CommitPayload(p.meta, p.chunks, s.id.geometry));
  RETURN_IF_ERROR(WriteFileAtomically(env, dir + "/log", log));
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  const std::set<uint64_t> kept(r->kept_ids.begin(), r->kept_ids.end());
  for (const auto& [key, loc] : s.index)
    if (!kept.count(key.first)) extents.push_back({loc.offset, s.id.geometry.RecordBytes(loc.codec)});
  if (!env->Exists(dir + "/chunks.dat")) {  // a repaired store has both its files, as a new one does
    ASSIGN_OR_RETURN(std::unique_ptr<File> empty, env->Open(dir + "/chunks.dat", OpenMode::kReadWrite));
    return env->SyncDir(dir);
  }
  if (extents.empty()) return Status::OK();
  std::sort(extents.begin(), extents.end());
  ASSIGN_OR_RETURN(std::unique_ptr<File> data, env->Open(dir + "/chunks.dat", OpenMode::kReadWrite));
  ASSIGN_OR_RETURN(const uint64_t size, data->Size());
  for (size_t i = 0; i < extents.size();) {  // adjacent extents as one hole; past the end there is nothing to give back
    uint64_t start = extents[i].first, end = start + extents[i].second;
    for (++i; i < extents.size() && extents[i].first <= end; ++i) end = std::max(end, extents[i].first + extents[i].second);
    end = std::min(end, size);
    if (start < end && data->PunchHole(start, end - start).ok()) r->bytes_freed += end - start;
  }
  return Status::OK();
}

}  // namespace

StatusOr<RepairReport> RepairStore(const RepairOptions& opt) {
  Env* env = opt.env != nullptr ? opt.env : Env::Default();
  const std::string& dir = opt.dir;
  if (!env->Exists(dir)) return Status::NotFound(dir + ": no store here");
  ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, env->Lock(dir + "/LOCK"));
  RepairReport r;
  Salvage s;
  bool write_manifest = false;
  ASSIGN_OR_RETURN(s.id, Identity(env, opt, &write_manifest, &r));
  ASSIGN_OR_RETURN(const std::string log, ReadIfThere(env, dir + "/log"));
  if (!env->Exists(dir + "/log") && env->Exists(dir + "/chunks.dat"))
    NoteDamage(&r, dir + "/log: missing, so no record names what chunks.dat holds (it is left as it is)");
  s.log = SalvageLog(log, s.id.geometry);
  r.records = static_cast<int64_t>(s.log.entries.size());
  r.records_malformed = s.log.malformed;
  r.log_bytes_skipped = s.log.bytes_skipped;
  IndexChunks(&s);
  RETURN_IF_ERROR(CheckChunks(env, dir, &s, &r));
  if (r.chunk_layers_damaged == r.chunk_layers_checked && s.checksum_failures > 0)
    return Status::InvalidArgument(dir + ": not one of the " + std::to_string(r.chunk_layers_checked) +
                                   " stored chunk layers holds its checksums under geometry " +
                                   GeometryText(s.id.geometry) +
                                   ": is that how the store was written? (pass --model and --chunk as the run that "
                                   "wrote it had them); nothing was changed");
  const std::vector<Planned> plan = Planner(s, dir, &r).Run(log.size());
  std::set<uint64_t> kept;
  for (const Planned& p : plan)
    for (const StoredChunk& ch : p.chunks) kept.insert(ch.id);
  r.kept_ids.assign(kept.begin(), kept.end());
  r.chunks_kept = static_cast<int64_t>(kept.size());
  r.chunks_unreachable = r.chunks_intact - r.chunks_kept - r.chunks_behind_damage;
  r.records_kept = static_cast<int64_t>(plan.size());
  r.changed = !r.first_damage.empty();
  if (r.changed) RETURN_IF_ERROR(WriteRepair(env, dir, s, plan, write_manifest, &r));
  return r;
}

}  // namespace impress
