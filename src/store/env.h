// The file operations the chunk store makes, behind one interface (LevelDB's
// Env in spirit). PosixEnv, reading with O_DIRECT, is the default backend;
// another (io_uring, a remote object store, a fault injector in tests)
// implements the same calls. Every failure is a one-line Status of kind
// IOError (NotFound for a missing file opened for reading) naming the file
// and the operating system's reason. Thread-safe: files may be read from
// several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace impress {

// Direct reads need buffers, offsets and lengths aligned to this.
constexpr size_t kDirectAlign = 4096;

class File {
 public:
  explicit File(std::string path) : path_(std::move(path)) {}
  virtual ~File() = default;
  const std::string& path() const { return path_; }
  // Reads exactly `n` bytes at `offset` into `dst`; reading past the end is an error.
  virtual Status Read(uint64_t offset, size_t n, void* dst) = 0;
  // Writes all `n` bytes at `offset`.
  virtual Status Write(uint64_t offset, const void* src, size_t n) = 0;
  // What was written reaches the device.
  virtual Status Sync() = 0;
  virtual Status Truncate(uint64_t size) = 0;
  // Gives the range's space back to the file system; the size stays.
  virtual Status PunchHole(uint64_t offset, uint64_t n) = 0;
  virtual StatusOr<uint64_t> Size() = 0;
  // Bytes the file occupies on the device (holes excluded); 0 when unknown.
  virtual uint64_t AllocatedBytes() = 0;

 private:
  std::string path_;
};

enum class OpenMode {
  kRead,        // read only; NotFound when missing
  kReadWrite,   // created when missing
  kCreate,      // created, or emptied when it exists
  kDirectRead,  // read only, bypassing the page cache
};

// Held until destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  virtual ~Env() = default;
  // The process's POSIX environment; never deleted.
  static Env* Default();
  virtual StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) = 0;
  // An exclusive lock on `path` (created when missing), across processes;
  // while another holds it, the error "DIR: in use by another process (NAME
  // is held)" for path DIR/NAME.
  virtual StatusOr<std::unique_ptr<FileLock>> Lock(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Creates `dir` and its missing parents.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Replaces `to` by `from` atomically.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // Makes the directory's entries (a rename into it) durable.
  virtual Status SyncDir(const std::string& dir) = 0;
};

// Forwards every call to another File: a backend that changes a few calls
// derives from it and overrides those (LevelDB's EnvWrapper, for files).
class FileWrapper : public File {
 public:
  explicit FileWrapper(std::unique_ptr<File> target) : File(target->path()), target_(std::move(target)) {}
  Status Read(uint64_t offset, size_t n, void* dst) override { return target_->Read(offset, n, dst); }
  Status Write(uint64_t offset, const void* src, size_t n) override { return target_->Write(offset, src, n); }
  Status Sync() override { return target_->Sync(); }
  Status Truncate(uint64_t size) override { return target_->Truncate(size); }
  Status PunchHole(uint64_t offset, uint64_t n) override { return target_->PunchHole(offset, n); }
  StatusOr<uint64_t> Size() override { return target_->Size(); }
  uint64_t AllocatedBytes() override { return target_->AllocatedBytes(); }

 private:
  std::unique_ptr<File> target_;
};

// Forwards every call to another Env (which must outlive it).
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    return target_->Open(path, mode);
  }
  StatusOr<std::unique_ptr<FileLock>> Lock(const std::string& path) override { return target_->Lock(path); }
  bool Exists(const std::string& path) override { return target_->Exists(path); }
  Status CreateDirs(const std::string& dir) override { return target_->CreateDirs(dir); }
  Status Rename(const std::string& from, const std::string& to) override { return target_->Rename(from, to); }
  Status Remove(const std::string& path) override { return target_->Remove(path); }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }

 private:
  Env* target_;
};

// An Env whose direct reads are paced to `bytes_per_second` in all, to
// emulate a slower disk; everything else goes to `base` as is. A read waits
// for its turn with no lock held. REQUIRES: bytes_per_second > 0
std::unique_ptr<Env> NewThrottledEnv(Env* base, double bytes_per_second);

// The whole file as bytes.
StatusOr<std::string> ReadFileToString(Env* env, const std::string& path);
// `contents` in place of the file at `path`, atomically and durably: a
// temporary beside it is written, synced and renamed over it.
Status WriteFileAtomically(Env* env, const std::string& path, const std::string& contents);

}  // namespace impress
