// KV reordering (docs/paper.md §2): a reordered store serves exactly the KV
// of the unreordered one, through every system; its copies survive reopening
// and are dropped when their node splits; replaced and dropped copies give
// their disk space back (online and by compaction) and their log records
// (when the log doubles, and on open); requests stay exact while
// the reorderer rewrites the nodes they read.
#include "kvstore/prefix_store.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/radix_tree.h"
#include "kvstore/compaction.h"
#include "kvstore/reorder_worker.h"
#include "kvstore/store_log.h"
#include "kvstore/store_repair.h"
#include "request/request.h"
#include "model/model.h"
#include "model_store_fixture.h"
#include "store_peer.h"

namespace impress {
namespace {

using testing::TempDir;

uint64_t LogSize(const std::string& dir) { return std::filesystem::file_size(dir + "/log"); }

// Keys and values of `chunks` in `layer`, stacked in stored order.
Status ReadLayer(PrefixStore& store, const std::vector<uint64_t>& chunks, int layer, at::Tensor* k, at::Tensor* v) {
  std::vector<ChunkParts> parts;
  LoadStats stats;
  RETURN_IF_ERROR(store.Fetch(chunks, layer, std::vector<uint8_t>(chunks.size(), kKeys | kValues), &parts, &stats));
  std::vector<at::Tensor> ks, vs;
  for (const ChunkParts& p : parts) ks.push_back(p.k), vs.push_back(p.v);
  *k = store.StackChunks(ks);
  *v = store.StackChunks(vs);
  return Status::OK();
}

TEST(RadixTreeReorder, CopiesAreRetiredWhenReplacedOrSplit) {
  RadixTree t(2);
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(t.Insert(a), (std::vector<uint64_t>{0, 1, 2}));
  RadixTree::Node* n = t.FindNode(a);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(t.PathTo(n), a);
  EXPECT_EQ(t.FindNode({1, 2}), nullptr);  // not the end of a node
  const uint64_t first = t.ReserveChunkIds(3);
  EXPECT_EQ(first, 3u);
  auto copy = std::make_shared<ReorderedChunks>();
  copy->chunks = {3, 4, 5};
  copy->order = {{5, 4, 3, 2, 1, 0}};
  t.SetReordered(n, copy);
  EXPECT_EQ(t.chunk_count(), 6u);
  EXPECT_TRUE(t.TakeRetired().empty());
  n->history = {{1, 2, 3, 4, 5, 6}};
  n->history_n = 1;
  // A prefix that diverges after the first chunk splits the node: the copy
  // mixes both halves' tokens and is dropped; the history splits.
  EXPECT_EQ(t.Insert({1, 2, 9, 9}), (std::vector<uint64_t>{0, 6}));
  EXPECT_EQ(n->reordered, nullptr);
  EXPECT_EQ(t.TakeRetired(), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(n->history[0], (std::vector<float>{1, 2}));
  RadixTree::Node* tail = t.FindNode(a);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->history[0], (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(tail->chunks, (std::vector<uint64_t>{1, 2}));
  // Ids named by the caller (replay) are kept, and later ids come after them.
  EXPECT_EQ(t.Insert({7, 7, 8, 8}, 40), (std::vector<uint64_t>{40, 41}));
  EXPECT_EQ(t.Insert({5, 5}), (std::vector<uint64_t>{42}));
}

// Replaying a damaged record never installs a copy whose mapping is not a
// permutation of its node's tokens (a load would index outside the node),
// and numbers that are not integers in range are errors, not conversions.
TEST(StoreLog, DamagedRecordsAreRefused) {
  RadixTree t(2);
  ASSERT_TRUE(ReplayRecord(InsertRecord({5, 6, 7, 8}, 0), 2, &t).ok());
  auto copy_installed = [&](const std::vector<std::vector<int32_t>>& order) {
    EXPECT_TRUE(ReplayRecord(ReorderRecord({5, 6, 7, 8}, {0, 1}, 2, order), 2, &t).ok());
    const RadixTree::Node* n = t.FindNode({5, 6, 7, 8});
    return n != nullptr && n->reordered != nullptr;
  };
  EXPECT_FALSE(copy_installed({{3, 1, 0, 2}, {0, 1, 2, 4}}));  // 4 is past the node
  EXPECT_FALSE(copy_installed({{3, 1, 0, 2}, {0, 1, 1, 2}}));  // 1 twice, 3 never
  EXPECT_FALSE(copy_installed({{3, 1, 0, 2}, {0, -1, 2, 3}}));
  EXPECT_TRUE(copy_installed({{3, 1, 0, 2}, {0, 1, 2, 3}}));
  for (const char* bad : {R"({"tokens":[1,2.5]})", R"({"tokens":[1,2],"first_chunk":-3})",
                          R"({"tokens":[1,3000000000]})", R"({"reorder":{"path":[5,6,7,8]}})", "[]"}) {
    Status s = ReplayRecord(bad, 2, &t);
    EXPECT_FALSE(s.ok()) << bad;
  }
}

class ReorderTest : public testing::ModelStoreTest {
 protected:
  std::vector<int32_t> Query(const std::vector<int32_t>& prefix, int q) {
    std::vector<int32_t> ctx = prefix;
    for (int32_t t : Tokens(6 + q % 5, 300 + q)) ctx.push_back(t);
    return ctx;
  }
  at::Tensor Run(const char* system, double retention, PrefixStore* store, const std::vector<int32_t>& ctx,
                 int64_t storable, RequestTrace* t = nullptr) {
    RequestTrace local;
    std::unique_ptr<RewindableKv> kv;
    auto r = RunRequest(*ParseSystem(system, retention), *model_, store, ctx, storable, &kv, t ? t : &local);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : at::Tensor();
  }
  // Stores `prefix`, then runs `requests` impress-itf-ro requests to build an importance history.
  void Warm(PrefixStore* store, const std::vector<int32_t>& prefix, int requests) {
    Run("as", 1.0, store, prefix, static_cast<int64_t>(prefix.size()));
    for (int q = 0; q < requests; ++q)
      Run("impress-itf-ro", 0.25, store, Query(prefix, q), static_cast<int64_t>(prefix.size()));
  }
  // Warms `prefix` with 3 requests and reorders it: one node gets a copy.
  void WarmAndReorder(PrefixStore* store, const std::vector<int32_t>& prefix) {
    Warm(store, prefix, 3);
    ReorderStats stats;
    ASSERT_TRUE(store->Reorder({}, &stats).ok());
    ASSERT_EQ(stats.nodes_reordered, 1);
  }
};

TEST_P(ReorderTest, ReorderedStoreServesTheSameKv) {
  TempDir a_dir, b_dir;
  auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
  auto b = PrefixStore::Open(*model_, Options(b_dir.path()));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> prefix = Tokens(128, 1);
  Warm(a->get(), prefix, 4);
  Run("as", 1.0, b->get(), prefix, 128);
  ReorderStats stats;
  ASSERT_TRUE((*a)->Reorder({}, &stats).ok());
  EXPECT_EQ(stats.nodes_reordered, 1);
  const int layers = model_->config().num_layers;
  EXPECT_EQ(stats.chunks_written, 8 * layers);
  // Some layer's order is not the identity (importance is not flat), and the
  // mapping list restores token order exactly.
  PrefixLease lease = (*a)->Acquire(prefix, 128);
  ASSERT_TRUE(lease.reordered());
  EXPECT_NE(lease.chunks, lease.match.chunks);
  bool moved = false;
  for (int l = 0; l < layers; ++l) {
    moved |= !lease.slot_of[l].equal(at::arange(128, at::kLong));
    at::Tensor k0, v0, k1, v1;
    ASSERT_TRUE(ReadLayer(**a, lease.match.chunks, l, &k0, &v0).ok());
    ASSERT_TRUE(ReadLayer(**a, lease.chunks, l, &k1, &v1).ok());
    EXPECT_FALSE(l == 0 && moved && k1.equal(k0));
    EXPECT_TRUE(ToTokenOrder(lease, l, k1).equal(k0)) << "layer " << l;
    EXPECT_TRUE(ToTokenOrder(lease, l, v1).equal(v0)) << "layer " << l;
  }
  (*a)->Release(lease);
  EXPECT_TRUE(moved);
  // Every system reads the reordered store and gets the unreordered store's logits.
  for (const auto& [system, retention] : std::vector<std::pair<const char*, double>>{
           {"as", 1.0}, {"impress-itf", 0.25}, {"impress-itf-ro", 0.5}, {"impress", 0.25}, {"h2o-lru", 0.25}}) {
    for (int q = 10; q < 13; ++q) {
      auto ctx = Query(prefix, q);
      RequestTrace ta;
      at::Tensor got = Run(system, retention, a->get(), ctx, 128, &ta);
      at::Tensor want = Run(system, retention, b->get(), ctx, 128);
      EXPECT_EQ(ta.reused_tokens, 128);
      // H2O attends to the same tokens, but the values of tokens no head
      // keeps come from different chunks (zeros or real values behind the mask).
      if (std::string(system) == "h2o-lru")
        EXPECT_LE((got - want).abs().max().item<double>(), 1e-6) << system;
      else
        EXPECT_TRUE(got.equal(want)) << system << " request " << q;
    }
  }
}

TEST_P(ReorderTest, CopiesSurviveReopenAndSplitsDropThem) {
  TempDir a_dir, b_dir;
  const std::vector<int32_t> prefix = Tokens(96, 2);
  {
    auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
    ASSERT_TRUE(a.ok());
    ASSERT_NO_FATAL_FAILURE(WarmAndReorder(a->get(), prefix));
    // Nothing changed since: a second pass writes nothing.
    ReorderStats again;
    ASSERT_TRUE((*a)->Reorder({}, &again).ok());
    EXPECT_EQ(again.nodes_reordered, 0);
  }
  auto b = PrefixStore::Open(*model_, Options(b_dir.path()));
  Run("as", 1.0, b->get(), prefix, 96);
  auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  PrefixLease lease = (*a)->Acquire(prefix, 96);
  EXPECT_TRUE(lease.reordered());
  (*a)->Release(lease);
  auto ctx = Query(prefix, 20);
  EXPECT_TRUE(Run("impress-itf-ro", 0.25, a->get(), ctx, 96).equal(Run("impress-itf-ro", 0.25, b->get(), ctx, 96)));
  // A prefix sharing the first 2 chunks splits the node: both halves read their original chunks.
  std::vector<int32_t> other(prefix.begin(), prefix.begin() + 32);
  for (int32_t t : Tokens(48, 9)) other.push_back(t);
  Run("as", 1.0, a->get(), other, 80);
  Run("as", 1.0, b->get(), other, 80);
  lease = (*a)->Acquire(prefix, 96);
  EXPECT_FALSE(lease.reordered());
  (*a)->Release(lease);
  EXPECT_TRUE(Run("as", 1.0, a->get(), ctx, 96).equal(Run("as", 1.0, b->get(), ctx, 96)));
  // ... and the split survives reopening too.
  a->reset();
  a = PrefixStore::Open(*model_, Options(a_dir.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  lease = (*a)->Acquire(prefix, 96);
  EXPECT_FALSE(lease.reordered());
  (*a)->Release(lease);
  EXPECT_TRUE(Run("impress-itf-ro", 0.25, a->get(), ctx, 96).equal(Run("impress-itf-ro", 0.25, b->get(), ctx, 96)));
}

// A replaced copy is freed by the reorder pass after the last lease on it
// ends; a copy a split dropped is freed offline by compaction. Requests read
// the same KV before and after, and after reopening.
TEST_P(ReorderTest, ReplacedAndDroppedCopiesAreFreed) {
  TempDir a_dir, b_dir;
  const std::vector<int32_t> prefix = Tokens(96, 2);
  auto b = PrefixStore::Open(*model_, Options(b_dir.path()));
  ASSERT_TRUE(b.ok());
  Run("as", 1.0, b->get(), prefix, 96);
  const auto ctx = Query(prefix, 20);
  const int layers = model_->config().num_layers;
  const uint64_t copy_records = 6 * static_cast<uint64_t>(layers);  // 96 tokens in 16-token chunks
  {
    auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
    ASSERT_TRUE(a.ok()) << a.status().message();
    Warm(a->get(), prefix, 3);
    ReorderStats first, second;
    ASSERT_TRUE((*a)->Reorder({}, &first).ok());
    ASSERT_EQ(first.nodes_reordered, 1);
    EXPECT_EQ(first.bytes_freed, 0);
    // A request still reading the first copy keeps it through the pass that replaces it.
    PrefixLease lease = (*a)->Acquire(prefix, 96);
    ASSERT_TRUE(lease.reordered());
    ASSERT_TRUE((*a)->Reorder({1, 0.0}, &second).ok());  // min_moved 0: rewrite even if the order held
    ASSERT_EQ(second.nodes_reordered, 1);
    EXPECT_EQ(second.bytes_freed, 0);
    EXPECT_TRUE(PrefixStoreTestPeer::disk(**a).Has(lease.chunks[0], 0));
    (*a)->Release(lease);
    FreeStats freed;
    ASSERT_TRUE((*a)->FreeRetired(&freed).ok());
    EXPECT_EQ(freed.chunk_layers, copy_records);
    EXPECT_FALSE(PrefixStoreTestPeer::disk(**a).Has(lease.chunks[0], 0));
    EXPECT_TRUE(Run("impress-itf-ro", 0.25, a->get(), ctx, 96).equal(Run("impress-itf-ro", 0.25, b->get(), ctx, 96)));
    // A prefix sharing the first 2 chunks splits the node and drops the second copy; the
    // store closes before any pass frees it.
    std::vector<int32_t> other(prefix.begin(), prefix.begin() + 32);
    for (int32_t t : Tokens(48, 9)) other.push_back(t);
    Run("as", 1.0, a->get(), other, 80);
    Run("as", 1.0, b->get(), other, 80);
  }
  std::vector<std::string> committed;
  {
    auto disk = ChunkStore::OpenExisting(a_dir.path(), &committed);
    ASSERT_TRUE(disk.ok()) << disk.status().message();
    const uint64_t stored = (*disk)->chunk_count();
    auto c = CompactStore(disk->get(), committed);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->chunks_freed, 6u);
    EXPECT_EQ(c->freed.chunk_layers, copy_records);
    EXPECT_EQ(c->allocated_before - c->allocated_after, c->freed.bytes);
    EXPECT_EQ((*disk)->chunk_count(), stored - copy_records);
    EXPECT_LT(c->log_after, c->log_before);  // the two freed copies' records are gone
    auto again = CompactStore(disk->get(), committed);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->chunks_freed, 0u);
    uint64_t checked = 0;
    Status v = (*disk)->Verify(&checked);
    EXPECT_TRUE(v.ok()) << v.message();
  }
  auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  for (const char* system : {"as", "impress-itf-ro", "h2o-lfu"})
    EXPECT_TRUE(Run(system, 0.25, a->get(), ctx, 96).equal(Run(system, 0.25, b->get(), ctx, 96))) << system;
}

// Repair of a reordered store whose copy has a damaged chunk: the copy is
// dropped (its intact chunks unreachable), the node keeps all its own chunks,
// and every system reads the repaired store as it reads an unreordered one.
TEST_P(ReorderTest, RepairDropsADamagedCopyAndKeepsItsNode) {
  TempDir a_dir, b_dir;
  const std::vector<int32_t> prefix = Tokens(96, 3);
  const auto ctx = Query(prefix, 30);
  auto b = PrefixStore::Open(*model_, Options(b_dir.path()));
  ASSERT_TRUE(b.ok());
  Run("as", 1.0, b->get(), prefix, 96);
  std::vector<uint64_t> copy;
  {
    auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
    ASSERT_TRUE(a.ok());
    ASSERT_NO_FATAL_FAILURE(WarmAndReorder(a->get(), prefix));
    PrefixLease lease = (*a)->Acquire(prefix, 96);
    ASSERT_TRUE(lease.reordered());
    copy = lease.chunks;
    (*a)->Release(lease);
  }
  {  // a byte flipped in the copy's second chunk, layer 0 keys: its offset from the log
    std::vector<LogEntry> entries;
    auto log = ReadFileToString(Env::Default(), a_dir.File("log"));
    ASSERT_TRUE(log.ok());
    size_t end = 0;
    ASSERT_TRUE(ReadLogEntries(*log, (*b)->geometry(), &entries, &end).ok());
    uint64_t off = 0;
    for (const LogEntry& e : entries)
      for (const StoredChunk& c : e.chunks)
        if (c.id == copy[1] && c.layer == 0) off = c.loc.offset;
    ASSERT_GT(off, 0u);
    std::fstream f(a_dir.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off + 5));
    f.put('\x33');
  }
  auto r = RepairStore({a_dir.path(), std::nullopt, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->copies_dropped, 1);
  EXPECT_EQ(r->prefixes_cut, 0);
  EXPECT_EQ(r->chunks_kept, 6);                            // the node's own chunks
  EXPECT_EQ(r->chunks_unreachable, static_cast<int64_t>(copy.size()) - 1);  // the copy's intact ones
  auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  PrefixLease lease = (*a)->Acquire(prefix, 96);
  EXPECT_FALSE(lease.reordered());
  (*a)->Release(lease);
  for (const char* system : {"as", "impress-itf-ro", "h2o-lfu"}) {
    RequestTrace t;
    EXPECT_TRUE(Run(system, 0.25, a->get(), ctx, 96, &t).equal(Run(system, 0.25, b->get(), ctx, 96))) << system;
    EXPECT_FALSE(t.recomputed_after_error) << t.error;
  }
}

// Passes that replace a node's copy again and again append a record each
// time; the pass that doubles the log rewrites it down to the live records,
// so the log stays within twice what it holds live and reopening serves the
// latest copy.
TEST_P(ReorderTest, PassesKeepTheLogBounded) {
  const std::vector<int32_t> prefix = Tokens(96, 2);
  const auto ctx = Query(prefix, 20);
  TempDir ref_dir;
  auto ref = PrefixStore::Open(*model_, Options(ref_dir.path()));
  ASSERT_TRUE(ref.ok());
  Run("as", 1.0, ref->get(), prefix, 96);
  // Returns the log's size after `passes` passes that each replace the copy, and the bytes they dropped.
  auto passes = [&](const std::string& dir, double growth, int passes, int64_t* dropped) {
    auto a = PrefixStore::Open(*model_, Options(dir));
    EXPECT_TRUE(a.ok()) << a.status().message();
    Warm(a->get(), prefix, 3);
    ReorderOptions o;
    o.min_moved = 0;  // rewrite the copy even if the order held
    o.log_growth = growth;
    o.log_min_bytes = 0;
    for (int i = 0; i < passes; ++i) {
      ReorderStats st;
      EXPECT_TRUE((*a)->Reorder(o, &st).ok());
      EXPECT_EQ(st.nodes_reordered, 1);
      *dropped += st.log_bytes_dropped;
    }
    return PrefixStoreTestPeer::disk(**a).LogBytes();
  };
  TempDir one, kept, bounded;
  int64_t dropped = 0;
  const uint64_t live = passes(one.path(), 0, 1, &dropped);  // the insert and one copy's record
  const uint64_t grown = passes(kept.path(), 0, 8, &dropped);
  EXPECT_EQ(dropped, 0);
  EXPECT_GT(grown, 4 * live);  // 8 copies' records and 7 frees
  const uint64_t log = passes(bounded.path(), 2.0, 8, &dropped);
  EXPECT_GT(dropped, 0);
  EXPECT_LT(log, 2 * live + live / 4);  // live records vary a little with the order they hold
  auto a = PrefixStore::Open(*model_, Options(bounded.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  PrefixLease lease = (*a)->Acquire(prefix, 96);
  EXPECT_TRUE(lease.reordered());
  (*a)->Release(lease);
  for (const char* system : {"as", "impress-itf-ro", "h2o-lfu"})
    EXPECT_TRUE(Run(system, 0.25, a->get(), ctx, 96).equal(Run(system, 0.25, ref->get(), ctx, 96))) << system;
}

// Freeing is housekeeping: when the store's disk is full (here a file-size
// limit at the log's size, so the free record cannot be appended) the pass
// still succeeds, counts the failure and keeps the chunks; the next pass frees them.
TEST_P(ReorderTest, AFailedFreeIsRetriedByTheNextPass) {
  TempDir dir, ref_dir;
  auto a = PrefixStore::Open(*model_, Options(dir.path()));
  auto ref = PrefixStore::Open(*model_, Options(ref_dir.path()));
  ASSERT_TRUE(a.ok() && ref.ok());
  const std::vector<int32_t> prefix = Tokens(96, 5);
  Warm(a->get(), prefix, 3);
  Run("as", 1.0, ref->get(), prefix, 96);
  ReorderStats first, second;
  ASSERT_TRUE((*a)->Reorder({}, &first).ok());
  PrefixLease lease = (*a)->Acquire(prefix, 96);  // pins the first copy through the second pass
  ASSERT_TRUE(lease.reordered());
  ASSERT_TRUE((*a)->Reorder({1, 0.0}, &second).ok());
  (*a)->Release(lease);
  ASSERT_TRUE(PrefixStoreTestPeer::disk(**a).Has(lease.chunks[0], 0));

  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit full = old_limit;
  full.rlim_cur = PrefixStoreTestPeer::disk(**a).LogBytes();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &full), 0);
  ReorderStats failed;
  const Status s = (*a)->Reorder({}, &failed);  // nothing to rewrite; only the free
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(failed.housekeeping_failures, 1);
  EXPECT_EQ(failed.bytes_freed, 0);
  EXPECT_TRUE(PrefixStoreTestPeer::disk(**a).Has(lease.chunks[0], 0));

  ReorderStats retried;
  ASSERT_TRUE((*a)->Reorder({}, &retried).ok());
  EXPECT_EQ(retried.housekeeping_failures, 0);
  EXPECT_GT(retried.bytes_freed, 0);
  EXPECT_FALSE(PrefixStoreTestPeer::disk(**a).Has(lease.chunks[0], 0));
  const std::vector<int32_t> ctx = Query(prefix, 1);
  EXPECT_TRUE(Run("impress-itf-ro", 0.25, a->get(), ctx, 96).equal(Run("impress-itf-ro", 0.25, ref->get(), ctx, 96)));
}

// A session that starts in token order (stored_copies false, as every
// `impress run` system does) leaves on disk the copy its own pass supersedes;
// the next open frees it and serves the newer copy.
TEST_P(ReorderTest, OpeningFreesWhatEarlierSessionsLeft) {
  TempDir dir;
  const std::vector<int32_t> prefix = Tokens(96, 2);
  auto first_chunk = [&](PrefixStore* store) {
    PrefixLease lease = store->Acquire(prefix, 96);
    const uint64_t id = lease.reordered() ? lease.chunks[0] : UINT64_MAX;
    store->Release(lease);
    return id;
  };
  uint64_t old_copy, new_copy;
  {
    auto a = PrefixStore::Open(*model_, Options(dir.path()));
    ASSERT_TRUE(a.ok()) << a.status().message();
    Warm(a->get(), prefix, 3);
    ReorderStats stats;
    ASSERT_TRUE((*a)->Reorder({}, &stats).ok());
    old_copy = first_chunk(a->get());
    ASSERT_NE(old_copy, UINT64_MAX);
  }
  {
    PrefixStoreOptions o = Options(dir.path());
    o.stored_copies = false;
    auto a = PrefixStore::Open(*model_, o);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(first_chunk(a->get()), UINT64_MAX);  // token order
    Warm(a->get(), prefix, 3);
    ReorderStats stats;
    ASSERT_TRUE((*a)->Reorder({}, &stats).ok());
    ASSERT_EQ(stats.nodes_reordered, 1);
    EXPECT_EQ(stats.bytes_freed, 0);
    EXPECT_TRUE(PrefixStoreTestPeer::disk(**a).Has(old_copy, 0));
    new_copy = first_chunk(a->get());
    ASSERT_NE(new_copy, UINT64_MAX);
  }
  const uint64_t log_before = LogSize(dir.path());
  auto a = PrefixStore::Open(*model_, Options(dir.path()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_FALSE(PrefixStoreTestPeer::disk(**a).Has(old_copy, 0));
  EXPECT_LT(PrefixStoreTestPeer::disk(**a).LogBytes(), log_before);  // and the old copy's record is gone
  EXPECT_EQ(first_chunk(a->get()), new_copy);
}

// The reorderer rewrites the nodes requests are reading, over and over (each
// request's importance changes the order): every request still gets the
// logits of an unreordered store.
TEST_P(ReorderTest, RequestsStayExactWhileReordering) {
  TempDir a_dir, b_dir;
  auto a = PrefixStore::Open(*model_, Options(a_dir.path()));
  auto b = PrefixStore::Open(*model_, Options(b_dir.path()));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<std::vector<int32_t>> prefixes = {Tokens(96, 3), Tokens(64, 4)};
  for (const auto& p : prefixes) {
    Warm(a->get(), p, 1);
    Run("as", 1.0, b->get(), p, static_cast<int64_t>(p.size()));
  }
  const char* systems[] = {"impress", "as", "h2o-lfu"};
  const int n = 18;
  std::vector<at::Tensor> want;
  for (int q = 0; q < n; ++q) {
    const auto& p = prefixes[q % 2];
    want.push_back(Run(systems[q % 3], 0.25, b->get(), Query(p, q), static_cast<int64_t>(p.size())));
  }
  ReorderWorkerOptions wo;
  wo.reorder.min_moved = 0;      // every pass replaces the copies requests are reading,
  wo.reorder.log_min_bytes = 0;  // and rewrites the log whenever it doubles
  ReorderWorker worker(**a, wo);
  // Triggers that arrive while a pass runs merge, so how many passes n requests
  // see depends on the machine's speed: requests go on (cycling through the n)
  // until the worker has rewritten the log at least once.
  for (int i = 0; i < n || (worker.stats().log_bytes_dropped == 0 && i < 20 * n); ++i) {
    const int q = i % n;
    worker.Trigger();
    const auto& p = prefixes[q % 2];
    at::Tensor got = Run(systems[q % 3], 0.25, a->get(), Query(p, q), static_cast<int64_t>(p.size()));
    if (q % 3 == 2)
      EXPECT_LE((got - want[q]).abs().max().item<double>(), 1e-6) << "request " << i;
    else
      EXPECT_TRUE(got.equal(want[q])) << "request " << i << " (" << systems[q % 3] << ")";
  }
  worker.Drain();
  EXPECT_TRUE(worker.status().ok()) << worker.status().message();
  EXPECT_GE(worker.stats().nodes_reordered, 2);
  EXPECT_GT(worker.stats().log_bytes_dropped, 0);  // the log was rewritten while requests read
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReorderTest, ::testing::Values("tiny-llama-gqa", "tiny-opt-postln-proj"),
                         testing::ParamName);

}  // namespace
}  // namespace impress
