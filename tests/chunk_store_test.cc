// The disk tier: round trips, direct I/O, checksums, fingerprints, freeing
// chunks, one process at a time, and crash safety under SIGKILL at random points.
#include "store/chunk_store.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/json_get.h"
#include "common/crc32c.h"
#include "test_util.h"

namespace impress {
namespace {

// One batch of reads given inline.
Status ReadList(ChunkStore& store, std::vector<ChunkRead> reads) { return store.Read(&reads); }

using testing::TempDir;

StoreOptions Options() {
  StoreOptions o;
  o.geometry = ChunkGeometry{16, 3, 2, 32, 1, 2};
  o.fingerprint = "test-model/float16/c16";
  o.io_threads = 4;
  return o;
}

// Deterministic content of one part.
std::vector<uint8_t> Content(uint64_t id, int layer, int part, size_t n) {
  std::vector<uint8_t> b(n);
  std::mt19937 rng(static_cast<uint32_t>(id * 131 + layer * 7 + part));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Commits chunks [first, first + n) for every layer as one record.
// Chunk `id` of `layer` with Content's parts, stored uncoded.
EncodedChunk ContentChunk(const ChunkGeometry& g, uint64_t id, int layer) {
  EncodedChunk e;
  e.chunk_id = id, e.layer = layer;
  const size_t bytes[3] = {g.KeyBytes(), g.KeyBytes(), g.ProbeBytes()};
  for (int part = 0; part < 3; ++part) {
    const std::vector<uint8_t> c = Content(id, layer, part, bytes[part]);
    e.bytes[part] = at::empty({static_cast<int64_t>(c.size())}, at::kByte);
    std::memcpy(e.bytes[part].data_ptr(), c.data(), c.size());
  }
  return e;
}

Status CommitChunks(ChunkStore& s, uint64_t first, int n) {
  const auto& g = s.geometry();
  std::vector<EncodedChunk> w;
  for (uint64_t id = first; id < first + n; ++id)
    for (int l = 0; l < g.layers; ++l) w.push_back(ContentChunk(g, id, l));
  return s.Commit(w, "record " + std::to_string(first));
}

void ExpectChunk(ChunkStore& s, uint64_t id, int layer) {
  const auto& g = s.geometry();
  std::vector<uint8_t> k(g.KeyBytes()), v(g.KeyBytes()), p(g.ProbeBytes());
  Status st = ReadList(s, {{id, layer, kKeys | kValues | kProbeKeys, k.data(), v.data(), p.data()}});
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(k, Content(id, layer, 0, k.size()));
  EXPECT_EQ(v, Content(id, layer, 1, v.size()));
  EXPECT_EQ(p, Content(id, layer, 2, p.size()));
}

uint64_t KernelReadBytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  uint64_t v = 0;
  while (in >> key >> v)
    if (key == "read_bytes:") return v;
  return 0;
}

TEST(Crc32c, KnownVector) { EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u); }

// The three-stream hardware path (blocks of 2048 and 256 bytes joined by
// shifting) against the byte-table one, over lengths around each block
// boundary, unaligned starts, and a value checksummed in two pieces.
TEST(Crc32c, EveryPathAgrees) {
  std::vector<uint8_t> buf(100003);
  uint32_t x = 12345;
  for (auto& b : buf) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  for (size_t n : {0, 1, 7, 8, 9, 767, 768, 769, 6143, 6144, 6145, 6912, 24576, 24580, 100000})
    for (size_t at : {0, 1, 3}) {
      EXPECT_EQ(Crc32c(&buf[at], n), Crc32cPortable(&buf[at], n)) << n << " at " << at;
      const size_t cut = n / 3 + 1;
      if (cut <= n) EXPECT_EQ(Crc32c(&buf[at + cut], n - cut, Crc32c(&buf[at], cut)), Crc32cPortable(&buf[at], n)) << n;
    }
  EXPECT_EQ(Crc32cPortable("123456789", 9), 0xE3069283u);
}

// GetInteger (common/json_get.h): integers in the type's range, however the
// JSON holds them; floats, out-of-range values and non-numbers throw.
TEST(JsonGet, IntegersOnlyAndInRange) {
  using nlohmann::json;
  EXPECT_EQ(GetInteger<int>(json::parse("7")), 7);
  EXPECT_EQ(GetInteger<int>(json::parse("-7")), -7);
  EXPECT_EQ(GetInteger<int>(json(int64_t{7})), 7);  // built in code: signed though non-negative
  EXPECT_EQ(GetInteger<uint64_t>(json::parse("18446744073709551615")), UINT64_MAX);
  EXPECT_EQ(GetInteger<int32_t>(json::parse("-2147483648")), INT32_MIN);
  for (const char* bad : {"2147483648", "-2147483649", "1.0", "6.7e20", "\"3\"", "true", "null", "[1]"})
    EXPECT_THROW(GetInteger<int32_t>(json::parse(bad)), std::invalid_argument) << bad;
  EXPECT_THROW(GetInteger<uint64_t>(json::parse("-1")), std::invalid_argument);
  EXPECT_THROW(GetInteger<uint32_t>(json::parse("4294967296")), std::invalid_argument);
  EXPECT_EQ(GetIntegers<uint64_t>(json::parse("[1, 2]")), (std::vector<uint64_t>{1, 2}));
  EXPECT_THROW(GetIntegers<uint64_t>(json::parse("[1, -2]")), std::invalid_argument);
  EXPECT_THROW(GetIntegers<uint64_t>(json::parse("{}")), std::invalid_argument);
}

// Healing a damaged chunk: a read that fails its checksum marks the chunk
// damaged; Replace writes new parts for it, gives the old ones back and
// clears the mark, and a reopened store reads the new parts.
TEST(ChunkStore, ReplaceHealsADamagedChunk) {
  TempDir dir;
  std::vector<std::string> metas;
  const ChunkGeometry g = Options().geometry;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), &metas);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE(CommitChunks(**s, 0, 2).ok());
  }
  // Flip a byte of chunk 1 layer 2's keys, where the log says they are.
  std::string log;
  {
    std::ifstream in(dir.path() + "/log", std::ios::binary);
    log.assign(std::istreambuf_iterator<char>(in), {});
  }
  const nlohmann::json rec = nlohmann::json::parse(log.substr(12));
  uint64_t off = 0;
  for (const auto& c : rec["chunks"])
    if (c["id"] == 1 && c["layer"] == 2) off = c["off"];
  {
    std::fstream f(dir.path() + "/chunks.dat", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(off + 5));
    char b = 0;
    f.read(&b, 1);
    b ^= 0x5a;
    f.seekp(static_cast<std::streamoff>(off + 5));
    f.write(&b, 1);
  }
  auto s = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE((*s)->Damaged({0, 1}).empty());  // nothing read yet
  std::vector<uint8_t> k(g.KeyBytes());
  EXPECT_TRUE(ReadList(**s, {{1, 2, kKeys, k.data(), nullptr, nullptr}}).IsCorruption());
  EXPECT_TRUE(ReadList(**s, {{0, 2, kKeys, k.data(), nullptr, nullptr}}).ok());
  EXPECT_EQ((*s)->Damaged({0, 1}), std::vector<uint64_t>{1});
  const uint64_t end = (*s)->data_bytes();
  // Every layer of chunk 1 again, with the content it was committed with.
  std::vector<EncodedChunk> w;
  for (int l = 0; l < g.layers; ++l) w.push_back(ContentChunk(g, 1, l));
  FreeStats freed;
  ASSERT_TRUE((*s)->Replace(w, "healed", &freed).ok());
  EXPECT_EQ(freed.chunk_layers, static_cast<uint64_t>(g.layers));
  EXPECT_EQ(freed.bytes, static_cast<uint64_t>(g.layers) * g.RecordBytes(g.codec));
  EXPECT_GT((*s)->data_bytes(), end);  // written past the end, never over the old parts
  EXPECT_TRUE((*s)->Damaged({0, 1}).empty());
  EXPECT_EQ((*s)->chunk_count(), static_cast<size_t>(2 * g.layers));
  for (int l = 0; l < g.layers; ++l) ExpectChunk(**s, 1, l);
  s->reset();
  metas.clear();
  auto again = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(metas, (std::vector<std::string>{"record 0", "healed"}));
  uint64_t checked = 0;
  EXPECT_TRUE((*again)->Verify(&checked).ok());
  EXPECT_EQ(checked, static_cast<uint64_t>(2 * g.layers));
  for (uint64_t id : {0, 1})
    for (int l = 0; l < g.layers; ++l) ExpectChunk(**again, id, l);
}

TEST(ChunkStore, RoundTripAndReopen) {
  TempDir dir;
  std::vector<std::string> metas;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), &metas);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE(CommitChunks(**s, 0, 3).ok());
    ASSERT_TRUE(CommitChunks(**s, 3, 2).ok());
    ExpectChunk(**s, 4, 2);
  }
  auto s = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(metas, (std::vector<std::string>{"record 0", "record 3"}));
  EXPECT_EQ((*s)->chunk_count(), 15u);
  for (uint64_t id = 0; id < 5; ++id) ExpectChunk(**s, id, 1);
  // Only the keys, as H2O reads them.
  std::vector<uint8_t> k((*s)->geometry().KeyBytes());
  ASSERT_TRUE(ReadList(**s, {{2, 0, kKeys, k.data(), nullptr, nullptr}}).ok());
  EXPECT_EQ(k, Content(2, 0, 0, k.size()));
  uint64_t checked = 0;
  EXPECT_TRUE((*s)->Verify(&checked).ok());
  EXPECT_EQ(checked, 15u);
}

TEST(ChunkStore, OtherModelIsAClearError) {
  TempDir dir;
  ASSERT_TRUE(ChunkStore::Open(dir.path(), Options(), nullptr).ok());
  StoreOptions other = Options();
  other.fingerprint = "another-model/float16/c16";
  auto s = ChunkStore::Open(dir.path(), other, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("store was written for 'test-model/float16/c16'"), std::string::npos);
  other = Options();
  other.geometry.chunk_tokens = 32;
  EXPECT_FALSE(ChunkStore::Open(dir.path(), other, nullptr).ok());
}

// Direct I/O: every read of the same chunk reaches the device, so the kernel's
// count of bytes read from storage grows each time (a page-cache hit would not).
TEST(ChunkStore, ReadsBypassThePageCache) {
  TempDir dir;
  auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(CommitChunks(**s, 0, 1).ok());
  ExpectChunk(**s, 0, 0);  // the page cache now holds the file, if it ever will
  const uint64_t before = KernelReadBytes();
  for (int i = 0; i < 20; ++i) ExpectChunk(**s, 0, 0);
  const uint64_t grew = KernelReadBytes() - before;
  const size_t per_read = 2 * 4096 + 4096;  // keys, values, probe keys, each padded to 4 KiB
  EXPECT_GE(grew, 20 * per_read) << "repeated reads were served from the page cache";
}

TEST(ChunkStore, FlippedByteIsDetectedNeverServed) {
  TempDir dir;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_TRUE(CommitChunks(**s, 0, 2).ok());
  }
  {
    std::fstream f(dir.File("chunks.dat"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(100);
    f.write(&c, 1);
  }
  auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_TRUE(s.ok());
  const auto& g = (*s)->geometry();
  std::vector<uint8_t> k(g.KeyBytes());
  Status st = ReadList(**s, {{0, 0, kKeys, k.data(), nullptr, nullptr}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fails its checksum"), std::string::npos);
  EXPECT_FALSE((*s)->Verify(nullptr).ok());
  ExpectChunk(**s, 1, 2);  // other chunks are intact
}

// A folder whose MANIFEST is gone but whose log and chunk file hold data
// (a partial restore, a careless cleanup) is refused, whatever geometry asks,
// and nothing in it is written.
TEST(ChunkStore, DataWithoutAManifestIsRefusedUntouched) {
  TempDir dir;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(CommitChunks(**s, 0, 2).ok());
  }
  ASSERT_TRUE(std::filesystem::remove(dir.File("MANIFEST")));
  const auto log = std::filesystem::file_size(dir.File("log"));
  const auto data = std::filesystem::file_size(dir.File("chunks.dat"));
  StoreOptions other = Options();
  other.geometry.chunk_tokens = 32;
  for (const StoreOptions& o : {Options(), other}) {
    auto s = ChunkStore::Open(dir.path(), o, nullptr);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.status().IsInvalidArgument());
    const std::string& m = s.status().message();
    EXPECT_NE(m.find("holds log (" + std::to_string(log) + " bytes) and chunks.dat (" + std::to_string(data) +
                     " bytes) but no MANIFEST"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("MANIFEST")));
  EXPECT_EQ(std::filesystem::file_size(dir.File("log")), log);
  EXPECT_EQ(std::filesystem::file_size(dir.File("chunks.dat")), data);
  // An empty folder, or one with empty files, is a new store.
  TempDir fresh;
  { std::ofstream(fresh.File("log")); }
  EXPECT_TRUE(ChunkStore::Open(fresh.path(), Options(), nullptr).ok());
}

// A chunk file cut short (a full disk, a copy cut off): the chunks past its
// end are damage, reported as a checksum mismatch is, and the ones before
// the cut are served.
TEST(ChunkStore, ChunksPastATruncationAreDamageNotAnIOError) {
  TempDir dir;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(CommitChunks(**s, 0, 4).ok());
  }
  const auto size = std::filesystem::file_size(dir.File("chunks.dat"));
  std::filesystem::resize_file(dir.File("chunks.dat"), size / 2 + 100);  // inside a chunk
  auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto& g = (*s)->geometry();
  std::vector<uint8_t> k(g.KeyBytes()), v(g.KeyBytes());
  Status last = ReadList(**s, {{3, g.layers - 1, kKeys | kValues, k.data(), v.data(), nullptr}});
  EXPECT_TRUE(last.IsCorruption()) << last.message();
  EXPECT_NE(last.message().find("past the end of the file"), std::string::npos) << last.message();
  ExpectChunk(**s, 0, 0);
  Status verify = (*s)->Verify(nullptr);
  EXPECT_TRUE(verify.IsCorruption()) << verify.message();
}

// Only a torn last record is cut off; a bad record with whole records after
// it is damage, and opening refuses the store without changing it.
TEST(ChunkStore, DamagedLogIsRefusedNotCut) {
  TempDir dir;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    for (uint64_t first : {0, 2, 4}) ASSERT_TRUE(CommitChunks(**s, first, 2).ok());
  }
  auto flip = [&](size_t at) {
    std::fstream f(dir.File("log"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c;
    f.read(&c, 1);
    c ^= 0x01;
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
  };
  std::ifstream in(dir.File("log"), std::ios::binary);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t len0;
  std::memcpy(&len0, &log[4], 4);
  const size_t second = 12 + len0;  // where the second record starts
  flip(second + 30);
  auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("log: the record at byte " + std::to_string(second) +
                                      " is corrupt and whole records follow it"),
            std::string::npos)
      << s.status().message();
  EXPECT_EQ(std::filesystem::file_size(dir.File("log")), log.size());
  flip(second + 30);  // undone: every record is back
  std::vector<std::string> metas;
  s = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(metas.size(), 3u);
  ExpectChunk(**s, 5, 2);
}

// A record with a good checksum that does not say what a commit or a free
// says (a crafted file, or a writer's bug; found by tests/fuzz/fuzz_store.cc)
// is refused with one line naming the log and the record, and the log is left
// as it was. So is a manifest whose geometry is out of range.
TEST(ChunkStore, MalformedRecordIsRefused) {
  const std::string good = R"({"meta":"m","chunks":[{"id":0,"layer":0,"off":0,"crc":[0,0,0]}]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"meta":"m","chunks":[{"id":0,"layer":0,"crc":[0,0,0]}]})", "key 'off' not found"},
      {R"({"meta":"m","chunks":[{"id":0,"layer":6.7e20,"off":0,"crc":[0,0,0]}]})", "expected an integer"},
      {R"({"meta":"m","chunks":[{"id":0,"layer":3,"off":0,"crc":[0,0,0]}]})", "layer 3 out of range"},
      {R"({"meta":"m","chunks":[{"id":-1,"layer":0,"off":0,"crc":[0,0,0]}]})", "expected an integer"},
      {R"({"meta":"m","chunks":[{"id":0,"layer":0,"off":100,"crc":[0,0,0]}]})", "not a 4 KiB boundary"},
      {R"({"meta":"m","chunks":[{"id":0,"layer":0,"off":0,"crc":[0]}]})", "1 checksums, not 3"},
      {R"({"meta":7,"chunks":[]})", "type must be string"},
      {R"({"free":"all"})", "expected an array of integers"},
  };
  for (const auto& [payload, why] : cases) {
    TempDir dir;
    { ASSERT_TRUE(ChunkStore::Open(dir.path(), Options(), nullptr).ok()); }
    const std::string log = LogRecord(good) + LogRecord(payload);
    std::ofstream(dir.File("log"), std::ios::binary) << log;
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_FALSE(s.ok()) << payload;
    const std::string& m = s.status().message();
    EXPECT_NE(m.find("log: the record at byte " + std::to_string(LogRecord(good).size()) + " is malformed"),
              std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(std::filesystem::file_size(dir.File("log")), log.size());
  }
  {  // Two whole, well-formed records whose chunks share bytes: freeing one would punch the other.
    TempDir dir;
    { ASSERT_TRUE(ChunkStore::Open(dir.path(), Options(), nullptr).ok()); }
    const std::string log = LogRecord(good) + LogRecord(R"({"meta":"m","chunks":[{"id":1,"layer":0,"off":4096,"crc":[0,0,0]}]})");
    std::ofstream(dir.File("log"), std::ios::binary) << log;
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("log: two stored chunks overlap at byte 4096 of chunks.dat"), std::string::npos)
        << s.status().message();
    EXPECT_EQ(std::filesystem::file_size(dir.File("log")), log.size());
  }
  TempDir dir;
  { ASSERT_TRUE(ChunkStore::Open(dir.path(), Options(), nullptr).ok()); }
  std::ofstream(dir.File("MANIFEST")) << R"({"format":1,"fingerprint":"f","geometry":{"chunk_tokens":16,"layers":3,)"
                                      << R"("kv_heads":2,"head_dim":32,"probe_kv_heads":1,"elem_bytes":-1}})";
  auto s = ChunkStore::OpenExisting(dir.path(), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("MANIFEST: corrupt manifest: geometry"), std::string::npos) << s.status().message();
  std::ofstream(dir.File("MANIFEST")) << "[1, 2]";
  s = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("MANIFEST: corrupt manifest: not a JSON object"), std::string::npos)
      << s.status().message();
}

// What the child does after each commit.
enum class Churn {
  kNone,
  kFree,            // frees the commit before last
  kFreeAndRewrite,  // that, then rewrites the log
};

// A child commits 4 chunks at a time in a loop (and churns after each) and
// reports each first id whose commit and churn returned; this kills it at a
// random moment after its first report and returns the last id reported, or
// -1 if the child never reported.
int64_t CommitUntilKilled(const std::string& dir, Churn churn, std::mt19937& rng) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fds[0]);
    auto s = ChunkStore::Open(dir, Options(), nullptr);
    if (!s.ok()) _exit(2);
    for (uint64_t first = 0;; first += 4) {
      if (!CommitChunks(**s, first, 4).ok()) _exit(3);
      if (churn != Churn::kNone && first >= 8 && !(*s)->Free({first - 8, first - 7, first - 6, first - 5}, nullptr).ok())
        _exit(5);
      if (churn == Churn::kFreeAndRewrite && !(*s)->RewriteLog(nullptr, nullptr).ok()) _exit(6);
      if (write(fds[1], &first, sizeof(first)) != sizeof(first)) _exit(4);
    }
  }
  close(fds[1]);
  // Kill at a random moment after the first reported commit (however slow
  // the child is to start, e.g. under a sanitizer).
  uint64_t first;
  int64_t reported = -1;
  if (read(fds[0], &first, sizeof(first)) == sizeof(first)) {
    reported = static_cast<int64_t>(first);
    usleep(std::uniform_int_distribution<int>(2000, 60000)(rng));
  }
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  while (read(fds[0], &first, sizeof(first)) == sizeof(first)) reported = static_cast<int64_t>(first);
  close(fds[0]);
  return reported;
}

// CommitUntilKilled, then reopens the store and verifies every indexed part;
// null (with a failure recorded) if the child never committed or the store
// does not open.
std::unique_ptr<ChunkStore> KillAndReopen(const std::string& dir, Churn churn, std::mt19937& rng,
                                          int64_t* reported, std::vector<std::string>* metas) {
  *reported = CommitUntilKilled(dir, churn, rng);
  if (*reported < 0) {
    ADD_FAILURE() << "the child never committed";
    return nullptr;
  }
  auto s = ChunkStore::Open(dir, Options(), metas);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().message();
    return nullptr;
  }
  uint64_t checked = 0;
  Status v = (*s)->Verify(&checked);
  EXPECT_TRUE(v.ok()) << v.message();
  return std::move(*s);
}

// The parent kills a committing child, reopens, and checks that every
// reported record is whole, nothing torn is visible, and the store keeps working.
TEST(ChunkStore, SurvivesSigkillMidWrite) {
  std::mt19937 rng(20251);
  for (int round = 0; round < 8; ++round) {
    TempDir dir;
    int64_t reported;
    std::vector<std::string> metas;
    auto s = KillAndReopen(dir.path(), Churn::kNone, rng, &reported, &metas);
    ASSERT_NE(s, nullptr);
    const int64_t committed = static_cast<int64_t>(metas.size());
    EXPECT_GE(committed * 4 - 4, reported) << "a reported commit was lost";
    EXPECT_EQ(s->chunk_count(), static_cast<size_t>(committed * 4 * 3));
    for (uint64_t id = 0; id < static_cast<uint64_t>(committed * 4); id += 3) ExpectChunk(*s, id, 1);
    EXPECT_FALSE(s->Has(committed * 4, 0));
    ASSERT_TRUE(CommitChunks(*s, committed * 4, 4).ok());  // still writable after recovery
    ExpectChunk(*s, committed * 4 + 3, 2);
  }
}

// Geometry of Options(): 2 KiB keys and values and 1 KiB probe keys, each padded to 4 KiB.
constexpr uint64_t kRecordBytes = 3 * 4096;

TEST(ChunkStore, FreeForgetsChunksAndGivesBackTheirSpace) {
  TempDir dir;
  uint64_t after = 0;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE(CommitChunks(**s, 0, 4).ok());
    ASSERT_TRUE(CommitChunks(**s, 4, 4).ok());
    const uint64_t before = (*s)->AllocatedBytes();
    FreeStats freed;
    Status f = (*s)->Free({1, 2, 3, 99}, &freed);  // 99 is not stored: ignored
    ASSERT_TRUE(f.ok()) << f.message();
    EXPECT_EQ(freed.chunk_layers, 9u);
    EXPECT_EQ(freed.bytes, 9 * kRecordBytes);
    after = (*s)->AllocatedBytes();
    EXPECT_EQ(before - after, freed.bytes) << "the file system kept the freed parts allocated";
    EXPECT_FALSE((*s)->Has(2, 1));
    std::vector<uint8_t> k((*s)->geometry().KeyBytes());
    Status r = ReadList(**s, {{2, 0, kKeys, k.data(), nullptr, nullptr}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("chunk 2 layer 0 is not stored"), std::string::npos) << r.message();
    for (uint64_t id : {0, 4, 7}) ExpectChunk(**s, id, 2);
    EXPECT_EQ((*s)->ChunkIds(), (std::vector<uint64_t>{0, 4, 5, 6, 7}));
  }
  std::vector<std::string> metas;
  auto s = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(metas, (std::vector<std::string>{"record 0", "record 4"}));  // the free record is the store's own
  EXPECT_EQ((*s)->chunk_count(), 15u);
  EXPECT_FALSE((*s)->Has(1, 0));
  EXPECT_EQ((*s)->AllocatedBytes(), after);
  uint64_t checked = 0;
  Status v = (*s)->Verify(&checked);
  EXPECT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(checked, 15u);
  // New records go after the end of the file, never into a hole.
  ASSERT_TRUE(CommitChunks(**s, 8, 2).ok());
  for (uint64_t id : {0, 5, 8, 9}) ExpectChunk(**s, id, 0);
}

// Rewriting the log drops Free's records and the records all of whose
// chunks were freed; the store reopens to the same chunks.
TEST(ChunkStore, RewriteLogKeepsWhatIsStored) {
  TempDir dir;
  {
    auto s = ChunkStore::Open(dir.path(), Options(), nullptr);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (uint64_t first : {0, 4, 8}) ASSERT_TRUE(CommitChunks(**s, first, 4).ok());
    ASSERT_TRUE((*s)->Free({4, 5, 6, 7}, nullptr).ok());
    uint64_t before = 0, after = 0;
    Status r = (*s)->RewriteLog(&before, &after);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_LT(after, before);
    EXPECT_EQ(std::filesystem::file_size(dir.File("log")), after);
    ASSERT_TRUE(CommitChunks(**s, 12, 1).ok());  // the log takes records after the rewrite
  }
  std::vector<std::string> metas;
  auto s = ChunkStore::Open(dir.path(), Options(), &metas);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(metas, (std::vector<std::string>{"record 0", "record 8", "record 12"}));
  EXPECT_EQ((*s)->ChunkIds(), (std::vector<uint64_t>{0, 1, 2, 3, 8, 9, 10, 11, 12}));
  uint64_t checked = 0;
  Status v = (*s)->Verify(&checked);
  EXPECT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(checked, 27u);
}

TEST(ChunkStore, OneProcessAtATime) {
  TempDir dir;
  auto a = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = ChunkStore::Open(dir.path(), Options(), nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("in use by another process"), std::string::npos) << b.status().message();
  a->reset();
  EXPECT_TRUE(ChunkStore::Open(dir.path(), Options(), nullptr).ok());
}

// As SurvivesSigkillMidWrite, with a child that also frees the chunks of the
// commit before last after each commit: a reopened store never indexes a
// chunk whose parts were punched away (Verify reads every indexed part), and
// what it indexes is exactly the committed chunks minus the freed ones.
TEST(ChunkStore, FreeSurvivesSigkill) {
  std::mt19937 rng(7);
  for (int round = 0; round < 8; ++round) {
    TempDir dir;
    int64_t reported;
    std::vector<std::string> metas;
    auto s = KillAndReopen(dir.path(), Churn::kFree, rng, &reported, &metas);
    ASSERT_NE(s, nullptr);
    // Commits 0..n-1 landed; the frees of all but the last one or two did.
    const uint64_t n = metas.size();
    std::vector<uint64_t> ids = s->ChunkIds();
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.back(), n * 4 - 1);
    EXPECT_LE(ids.size(), 12u);
    EXPECT_GE(ids.size(), std::min<uint64_t>(n * 4, 8));
    for (uint64_t id : ids) ExpectChunk(*s, id, 1);
  }
}

// As FreeSurvivesSigkill, with the log rewritten after every free: a kill
// before the rename keeps the old log (and leaves log.tmp behind), after it
// the new one; either way the reopened store indexes exactly the live
// commits, every reported one among them, and can rewrite its log again.
TEST(ChunkStore, RewriteLogSurvivesSigkill) {
  std::mt19937 rng(11);
  for (int round = 0; round < 8; ++round) {
    TempDir dir;
    int64_t reported;
    std::vector<std::string> metas;
    auto s = KillAndReopen(dir.path(), Churn::kFreeAndRewrite, rng, &reported, &metas);
    ASSERT_NE(s, nullptr);
    std::vector<uint64_t> ids = s->ChunkIds();
    ASSERT_FALSE(ids.empty());
    const uint64_t last = ids.back() + 1;  // the end of the newest commit that landed
    EXPECT_EQ(last % 4, 0u);
    EXPECT_GE(static_cast<int64_t>(last), reported + 4) << "a reported commit was lost";
    // The live commits are the last two, and a third whose free had not landed.
    EXPECT_LE(ids.size(), 12u);
    EXPECT_GE(ids.size(), std::min<uint64_t>(last, 8));
    EXPECT_GE(ids.front() + 12, last);
    // The log holds those commits and what came after the last rewrite: never the freed ones.
    EXPECT_LE(metas.size(), 3u);
    EXPECT_EQ(metas.back(), "record " + std::to_string(last - 4));
    for (uint64_t id : ids) ExpectChunk(*s, id, 2);
    ASSERT_TRUE(CommitChunks(*s, last, 4).ok());
    Status r = s->RewriteLog(nullptr, nullptr);
    EXPECT_TRUE(r.ok()) << r.message();
    ExpectChunk(*s, last + 1, 0);
  }
}

}  // namespace
}  // namespace impress
