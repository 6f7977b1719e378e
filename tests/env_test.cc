// The storage seam: the whole-file helpers over the POSIX backend, and a
// backend that fails reads the way a dying disk does, to show what a
// request does with each kind of failure: an I/O error is the request's
// error (one line naming the file), never a silent recomputation.
#include "store/env.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "request/request.h"
#include "model_store_fixture.h"

namespace impress {
namespace {

using testing::TempDir;

TEST(Env, WholeFileHelpers) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.File("f");
  ASSERT_TRUE(WriteFileAtomically(env, path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(env, path, "second, longer").ok());
  auto got = ReadFileToString(env, path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, "second, longer");
  EXPECT_FALSE(env->Exists(path + ".tmp"));
  auto missing = ReadFileToString(env, dir.File("absent"));
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().message();
  EXPECT_NE(missing.status().message().find(dir.File("absent")), std::string::npos);
}

TEST(Env, ReadPastTheEndIsAnError) {
  TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(WriteFileAtomically(env, dir.File("f"), "abc").ok());
  auto f = env->Open(dir.File("f"), OpenMode::kRead);
  ASSERT_TRUE(f.ok());
  char buf[8];
  Status s = (*f)->Read(0, sizeof buf, buf);
  EXPECT_TRUE(s.IsIOError()) << s.message();
  EXPECT_NE(s.message().find("the file ends after 3"), std::string::npos) << s.message();
}

TEST(Env, SecondLockIsRefusedUntilTheFirstIsGone) {
  TempDir dir;
  Env* env = Env::Default();
  auto a = env->Lock(dir.File("LOCK"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  // flock is per open file description: a second open in this process conflicts too.
  auto b = env->Lock(dir.File("LOCK"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), dir.path() + ": in use by another process (LOCK is held)");
  a->reset();
  EXPECT_TRUE(env->Lock(dir.File("LOCK")).ok());
}

// Direct reads fail with EIO's text while `failing` is set.
class FailingReadsEnv final : public EnvWrapper {
 public:
  FailingReadsEnv() : EnvWrapper(Env::Default()) {}
  std::atomic<bool> failing{false};

  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, EnvWrapper::Open(path, mode));
    if (mode != OpenMode::kDirectRead) return f;
    return std::unique_ptr<File>(new Failing(std::move(f), &failing));
  }

 private:
  class Failing final : public FileWrapper {
   public:
    Failing(std::unique_ptr<File> f, std::atomic<bool>* failing) : FileWrapper(std::move(f)), failing_(failing) {}
    Status Read(uint64_t offset, size_t n, void* dst) override {
      if (*failing_) return Status::IOError(path() + ": read at " + std::to_string(offset) + " failed: Input/output error");
      return FileWrapper::Read(offset, n, dst);
    }

   private:
    std::atomic<bool>* failing_;
  };
};

// Syncs of chunks.dat wait, while held, until released: a writer stuck in
// its fsync for as long as the test likes, with no clock involved.
class HeldSyncEnv final : public EnvWrapper {
 public:
  HeldSyncEnv() : EnvWrapper(Env::Default()) {}
  void Hold() {
    std::lock_guard<std::mutex> l(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // True once a sync is waiting (within `limit`).
  bool WaitForAHeldSync(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return waiting_ > 0; });
  }
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, EnvWrapper::Open(path, mode));
    if (path.size() < 11 || path.compare(path.size() - 11, 11, "/chunks.dat") != 0) return f;
    return std::unique_ptr<File>(new Held(std::move(f), this));
  }

 private:
  class Held final : public FileWrapper {
   public:
    Held(std::unique_ptr<File> f, HeldSyncEnv* env) : FileWrapper(std::move(f)), env_(env) {}
    Status Sync() override {
      {
        std::unique_lock<std::mutex> l(env_->mu_);
        env_->waiting_++;
        env_->cv_.notify_all();
        env_->cv_.wait(l, [&] { return !env_->held_; });
        env_->waiting_--;
      }
      return FileWrapper::Sync();
    }

   private:
    HeldSyncEnv* env_;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int waiting_ = 0;
};

class EnvFaultTest : public testing::ModelStoreTest {
 protected:
  // A store in `dir` under `env` with no caches (every load reads the disk)
  // holding a 48-token prefix; ctx_ is that prefix and 6 tokens more.
  std::unique_ptr<PrefixStore> StoredPrefix(const TempDir& dir, Env* env) {
    PrefixStoreOptions o = Options(dir.path());
    o.tiers = TiersOver(CacheLevels({}));
    o.env = env;
    auto store = PrefixStore::Open(*model_, o);
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return nullptr;
    const std::vector<int32_t> prefix = Tokens(48, 5);
    ctx_ = prefix;
    for (int32_t t : Tokens(6, 9)) ctx_.push_back(t);
    std::unique_ptr<RewindableKv> kv;
    RequestTrace warm;
    EXPECT_TRUE(RunRequest(*ParseSystem("as"), *model_, store->get(), prefix, 48, &kv, &warm).ok());
    return std::move(*store);
  }
  std::vector<int32_t> ctx_;
};

// A request that stores a new prefix waits in its fsync (held by the Env);
// meanwhile requests on a stored prefix, each system's, finish: nothing a
// read takes (the index, the chunk store's index, the caches) is held across
// another request's disk write. Ordered by the Env, not by a clock.
TEST_P(EnvFaultTest, ReadersDoNotWaitOnAnotherRequestsFsync) {
  TempDir dir;
  HeldSyncEnv env;
  std::unique_ptr<PrefixStore> store = StoredPrefix(dir, &env);
  ASSERT_NE(store, nullptr);
  const std::vector<int32_t>& ctx = ctx_;
  std::unique_ptr<RewindableKv> kv;
  std::vector<at::Tensor> before;
  for (const char* name : {"as", "h2o-lru", "impress-itf"}) {
    RequestTrace t;
    auto r = RunRequest(*ParseSystem(name, 0.25), *model_, store.get(), ctx, 48, &kv, &t);
    ASSERT_TRUE(r.ok()) << r.status().message();
    before.push_back(*r);
  }
  env.Hold();
  Status written;
  std::thread writer([&] {
    std::unique_ptr<RewindableKv> wkv;
    RequestTrace t;
    const std::vector<int32_t> other = Tokens(64, 11);
    written = RunRequest(*ParseSystem("as"), *model_, store.get(), other, 64, &wkv, &t).status();
  });
  const bool held = env.WaitForAHeldSync(std::chrono::seconds(120));
  std::future<std::vector<at::Tensor>> readers = std::async(std::launch::async, [&] {
    std::vector<at::Tensor> out;
    for (const char* name : {"as", "h2o-lru", "impress-itf"}) {
      std::unique_ptr<RewindableKv> rkv;
      RequestTrace t;
      auto r = RunRequest(*ParseSystem(name, 0.25), *model_, store.get(), ctx, 48, &rkv, &t);
      out.push_back(r.ok() && t.reused_tokens == 48 ? *r : at::Tensor());
    }
    return out;
  });
  const bool finished = readers.wait_for(std::chrono::seconds(120)) == std::future_status::ready;
  env.Release();
  writer.join();
  ASSERT_TRUE(held) << "the writer never reached its fsync";
  ASSERT_TRUE(finished) << "a reader waited on another request's fsync";
  ASSERT_TRUE(written.ok()) << written.message();
  const std::vector<at::Tensor> got = readers.get();
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].defined()) << i;
    EXPECT_TRUE(at::equal(got[i], before[i])) << i;
  }
}

TEST_P(EnvFaultTest, ReadErrorIsTheRequestsErrorNotARecomputation) {
  TempDir dir;
  FailingReadsEnv env;
  std::unique_ptr<PrefixStore> store = StoredPrefix(dir, &env);
  ASSERT_NE(store, nullptr);
  const std::vector<int32_t>& ctx = ctx_;
  std::unique_ptr<RewindableKv> kv;
  env.failing = true;
  for (const char* name : {"as", "h2o-lru", "impress-itf"}) {
    RequestTrace t;
    auto r = RunRequest(*ParseSystem(name, 0.25), *model_, store.get(), ctx, 48, &kv, &t);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_TRUE(r.status().IsIOError()) << name << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(dir.path() + "/chunks.dat: read at "), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    EXPECT_FALSE(t.recomputed_after_error) << name;
  }
  env.failing = false;  // the disk is back: the stored prefix serves again
  RequestTrace t;
  ASSERT_TRUE(RunRequest(*ParseSystem("as"), *model_, store.get(), ctx, 48, &kv, &t).ok());
  EXPECT_EQ(t.reused_tokens, 48);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EnvFaultTest, ::testing::Values("tiny-llama-gqa"), testing::ParamName);

}  // namespace
}  // namespace impress
