#include "power_cut_env.h"

#include <algorithm>
#include <set>

namespace impress::testing {
namespace {

std::string DirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
}

Status PowerCut(const std::string& what) { return Status::IOError(what + ": power cut"); }

// A File whose changes the Env remembers until they are synced.
class PowerCutFile final : public FileWrapper {
 public:
  PowerCutFile(std::unique_ptr<File> f, PowerCutEnv* env, std::shared_ptr<PowerCutEnv::Node> node)
      : FileWrapper(std::move(f)), env_(env), node_(std::move(node)) {}
  Status Write(uint64_t offset, const void* src, size_t n) override {
    if (!env_->Proceed()) return PowerCut(path());
    RETURN_IF_ERROR(env_->Remember(node_.get(), offset, n));
    return FileWrapper::Write(offset, src, n);
  }
  Status Sync() override {
    if (!env_->Proceed()) return PowerCut(path());
    RETURN_IF_ERROR(FileWrapper::Sync());
    env_->Synced(node_.get());
    return Status::OK();
  }
  Status Truncate(uint64_t size) override {
    if (!env_->Proceed()) return PowerCut(path());
    ASSIGN_OR_RETURN(const uint64_t now, Size());
    RETURN_IF_ERROR(env_->Remember(node_.get(), std::min(size, now), now > size ? now - size : 0));
    return FileWrapper::Truncate(size);
  }
  Status PunchHole(uint64_t offset, uint64_t n) override {
    if (!env_->Proceed()) return PowerCut(path());
    RETURN_IF_ERROR(env_->Remember(node_.get(), offset, n));
    return FileWrapper::PunchHole(offset, n);
  }

 private:
  PowerCutEnv* env_;
  std::shared_ptr<PowerCutEnv::Node> node_;
};

}  // namespace

PowerCutEnv::~PowerCutEnv() = default;

void PowerCutEnv::CutPowerAt(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  cut_at_ = n;
}

int64_t PowerCutEnv::mutating_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

bool PowerCutEnv::power_cut() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cut_at_ > 0 && calls_ >= cut_at_;
}

bool PowerCutEnv::Proceed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_;
  return cut_at_ == 0 || calls_ < cut_at_;
}

std::shared_ptr<PowerCutEnv::Node> PowerCutEnv::NodeFor(const std::string& path) {
  auto& n = nodes_[path];
  if (!n) {
    n = std::make_shared<Node>();
    n->path = path;
  }
  return n;
}

Status PowerCutEnv::Remember(Node* node, uint64_t offset, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(std::unique_ptr<File> f, target()->Open(node->path, OpenMode::kRead));
  ASSIGN_OR_RETURN(const uint64_t size, f->Size());
  Undo u{offset, "", size};
  if (offset < size) {
    u.bytes.resize(static_cast<size_t>(std::min<uint64_t>(n, size - offset)));
    RETURN_IF_ERROR(f->Read(offset, u.bytes.size(), u.bytes.data()));
  }
  node->unsynced.push_back(std::move(u));
  return Status::OK();
}

void PowerCutEnv::Synced(Node* node) {
  std::lock_guard<std::mutex> lock(mu_);
  node->unsynced.clear();
}

StatusOr<std::unique_ptr<File>> PowerCutEnv::Open(const std::string& path, OpenMode mode) {
  if (mode == OpenMode::kRead || mode == OpenMode::kDirectRead) return EnvWrapper::Open(path, mode);
  const bool existed = target()->Exists(path);
  if (!Proceed()) return PowerCut(path);
  std::shared_ptr<Node> node;
  {
    std::lock_guard<std::mutex> lock(mu_);
    node = NodeFor(path);
    if (!existed) node->created = true;
  }
  if (existed && mode == OpenMode::kCreate) {  // emptied: remembered like a truncate to 0
    ASSIGN_OR_RETURN(std::unique_ptr<File> old, target()->Open(path, OpenMode::kRead));
    ASSIGN_OR_RETURN(const uint64_t size, old->Size());
    RETURN_IF_ERROR(Remember(node.get(), 0, size));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<File> f, EnvWrapper::Open(path, mode));
  return std::unique_ptr<File>(new PowerCutFile(std::move(f), this, node));
}

Status PowerCutEnv::CreateDirs(const std::string& dir) {
  if (!Proceed()) return PowerCut(dir);
  return EnvWrapper::CreateDirs(dir);  // directories are taken as durable: tests make them beforehand
}

Status PowerCutEnv::Rename(const std::string& from, const std::string& to) {
  if (!Proceed()) return PowerCut(from);
  std::lock_guard<std::mutex> lock(mu_);
  PendingRename r{from, to, "", NodeFor(from), nullptr};
  if (target()->Exists(to)) {  // keep the replaced file for a reboot that undoes this
    r.backup = to + ".powercut-" + std::to_string(++backups_);
    RETURN_IF_ERROR(target()->Rename(to, r.backup));
    auto it = nodes_.find(to);
    if (it != nodes_.end()) {
      r.replaced = it->second;
      r.replaced->path = r.backup;
    }
  }
  RETURN_IF_ERROR(target()->Rename(from, to));
  nodes_.erase(from);
  r.node->path = to;
  nodes_[to] = r.node;
  renames_.push_back(std::move(r));
  return Status::OK();
}

Status PowerCutEnv::Remove(const std::string& path) {
  if (!Proceed()) return PowerCut(path);
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.erase(path);  // taken as durable at once: a file a reboot brings back is only a stale leftover
  return EnvWrapper::Remove(path);
}

Status PowerCutEnv::SyncDir(const std::string& dir) {
  if (!Proceed()) return PowerCut(dir);
  RETURN_IF_ERROR(EnvWrapper::SyncDir(dir));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PendingRename> still;
  for (PendingRename& r : renames_) {
    if (DirOf(r.to) != dir) {
      still.push_back(std::move(r));
      continue;
    }
    if (!r.backup.empty()) RETURN_IF_ERROR(target()->Remove(r.backup));
  }
  renames_ = std::move(still);
  for (auto& [path, node] : nodes_)
    if (DirOf(path) == dir) node->created = false;
  return Status::OK();
}

Status PowerCutEnv::Reboot(std::mt19937_64* rng, bool keep_some) {
  std::lock_guard<std::mutex> lock(mu_);
  auto kept = [&](size_t n) { return keep_some ? static_cast<size_t>((*rng)() % (n + 1)) : size_t{0}; };
  std::set<std::shared_ptr<Node>> files;  // every file, those a rename replaced too
  for (auto& [path, node] : nodes_) files.insert(node);
  for (const PendingRename& r : renames_)
    if (r.replaced) files.insert(r.replaced);
  for (const auto& node : files) {  // each file's unsynced changes, from the last back
    const size_t keep = kept(node->unsynced.size());
    if (node->unsynced.size() == keep || !target()->Exists(node->path)) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, target()->Open(node->path, OpenMode::kReadWrite));
    for (size_t i = node->unsynced.size(); i-- > keep;) {
      const Undo& u = node->unsynced[i];
      if (!u.bytes.empty()) RETURN_IF_ERROR(f->Write(u.offset, u.bytes.data(), u.bytes.size()));
      RETURN_IF_ERROR(f->Truncate(u.size));
    }
    node->unsynced.clear();
  }
  const size_t keep = kept(renames_.size());
  for (size_t i = renames_.size(); i-- > keep;) {
    PendingRename& r = renames_[i];
    RETURN_IF_ERROR(target()->Rename(r.to, r.from));
    r.node->path = r.from;
    if (!r.backup.empty()) RETURN_IF_ERROR(target()->Rename(r.backup, r.to));
    if (r.replaced) r.replaced->path = r.to;
  }
  for (size_t i = 0; i < keep; ++i) {  // a durable rename made its file's entry durable too
    renames_[i].node->created = false;
    if (!renames_[i].backup.empty()) RETURN_IF_ERROR(target()->Remove(renames_[i].backup));
  }
  renames_.clear();
  std::map<std::string, std::shared_ptr<Node>> by_path;
  for (auto& [path, node] : nodes_) by_path[node->path] = node;
  for (auto& [path, node] : by_path)
    if (node->created && !(keep_some && (*rng)() % 2 == 0) && target()->Exists(path)) RETURN_IF_ERROR(target()->Remove(path));
  nodes_.clear();
  return Status::OK();
}

}  // namespace impress::testing
