// Env::Default(): POSIX files; kDirectRead opens with O_DIRECT.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "store/env.h"

namespace impress {
namespace {

Status Errno(const std::string& what) { return Status::IOError(what + ": " + std::strerror(errno)); }

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd) : File(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, void* dst) override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, static_cast<uint8_t*>(dst) + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Errno(path() + ": read at " + std::to_string(offset) + " failed");
      if (r == 0)
        return Status::IOError(path() + ": read at " + std::to_string(offset) + " failed: " +
                               std::to_string(n) + " bytes asked, the file ends after " + std::to_string(done));
      done += static_cast<size_t>(r);
    }
    return Status::OK();
  }
  Status Write(uint64_t offset, const void* src, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(src);
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        return Errno(path() + ": write failed");
      }
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return Status::OK();
  }
  Status Sync() override { return ::fdatasync(fd_) == 0 ? Status::OK() : Errno(path() + ": sync failed"); }
  Status Truncate(uint64_t size) override {
    return ::ftruncate(fd_, static_cast<off_t>(size)) == 0 ? Status::OK() : Errno(path() + ": cannot truncate");
  }
  Status PunchHole(uint64_t offset, uint64_t n) override {
    if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(n)) != 0)
      return Errno(path() + ": cannot punch a hole");
    return Status::OK();
  }
  StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Errno(path() + ": cannot stat");
    return static_cast<uint64_t>(st.st_size);
  }
  uint64_t AllocatedBytes() override {
    struct stat st;
    return ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
  }

 private:
  int fd_;
};

class PosixLock final : public FileLock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  ~PosixLock() override { ::close(fd_); }  // closing releases the flock

 private:
  int fd_;
};

class PosixEnv final : public Env {
 public:
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    const char* what = ": cannot open";
    switch (mode) {
      case OpenMode::kRead: flags |= O_RDONLY; break;
      case OpenMode::kReadWrite: flags |= O_RDWR | O_CREAT; break;
      case OpenMode::kCreate: flags |= O_RDWR | O_CREAT | O_TRUNC, what = ": cannot create"; break;
      case OpenMode::kDirectRead: flags |= O_RDONLY | O_DIRECT, what = ": cannot open with O_DIRECT"; break;
    }
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      if (errno == ENOENT && mode == OpenMode::kRead) return Status::NotFound(path + ": no such file");
      return Errno(path + what);
    }
    return std::unique_ptr<File>(new PosixFile(path, fd));
  }
  StatusOr<std::unique_ptr<FileLock>> Lock(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno(path + ": cannot open");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const size_t slash = path.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
      Status s = errno == EWOULDBLOCK ? Status::IOError(dir + ": in use by another process (" +
                                                        path.substr(slash + 1) + " is held)")
                                      : Errno(path + ": cannot lock");
      ::close(fd);
      return s;
    }
    return std::unique_ptr<FileLock>(new PosixLock(fd));
  }
  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    return ec ? Status::IOError(dir + ": cannot create: " + ec.message()) : Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? Status::OK() : Errno(to + ": cannot replace");
  }
  Status Remove(const std::string& path) override {
    return ::unlink(path.c_str()) == 0 || errno == ENOENT ? Status::OK() : Errno(path + ": cannot remove");
  }
  Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno(dir + ": cannot open");
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok ? Status::OK() : Errno(dir + ": sync failed");
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

}  // namespace impress
