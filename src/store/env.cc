// What every Env gets on top of its calls: whole-file helpers and pacing.
#include "store/env.h"

#include <algorithm>

#include "common/pacer.h"

namespace impress {

StatusOr<std::string> ReadFileToString(Env* env, const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<File> f, env->Open(path, OpenMode::kRead));
  ASSIGN_OR_RETURN(const uint64_t n, f->Size());
  std::string bytes(static_cast<size_t>(n), '\0');
  if (n > 0) RETURN_IF_ERROR(f->Read(0, bytes.size(), bytes.data()));
  return bytes;
}

Status WriteFileAtomically(Env* env, const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp";
  Status s;
  {
    StatusOr<std::unique_ptr<File>> f = env->Open(tmp, OpenMode::kCreate);
    if (!f.ok()) return f.status();
    s = (*f)->Write(0, contents.data(), contents.size());
    if (s.ok()) s = (*f)->Sync();
  }
  if (s.ok()) s = env->Rename(tmp, path);
  if (!s.ok()) {
    (void)env->Remove(tmp);
    return s;
  }
  const size_t slash = path.find_last_of('/');
  return env->SyncDir(slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1)));
}

namespace {

class PacedFile final : public FileWrapper {
 public:
  PacedFile(std::unique_ptr<File> f, Pacer* pacer) : FileWrapper(std::move(f)), pacer_(pacer) {}
  Status Read(uint64_t offset, size_t n, void* dst) override {
    pacer_->Wait(n);
    return FileWrapper::Read(offset, n, dst);
  }

 private:
  Pacer* pacer_;
};

class ThrottledEnv final : public EnvWrapper {
 public:
  ThrottledEnv(Env* base, double bytes_per_second) : EnvWrapper(base), pacer_(bytes_per_second) {}
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, EnvWrapper::Open(path, mode));
    if (mode != OpenMode::kDirectRead) return f;
    return std::unique_ptr<File>(new PacedFile(std::move(f), &pacer_));
  }

 private:
  Pacer pacer_;
};

}  // namespace

std::unique_ptr<Env> NewThrottledEnv(Env* base, double bytes_per_second) {
  IMPRESS_CHECK(bytes_per_second > 0);
  return std::make_unique<ThrottledEnv>(base, bytes_per_second);
}

}  // namespace impress
