// An Env that knows what would be on the platter if the power went out now
// (LevelDB's FaultInjectionTestEnv in spirit). A write, truncate or punched
// hole reaches the platter at the file's next Sync; a rename, or a file's
// creation, at the next SyncDir of its directory. CutPowerAt(n) makes the
// n-th mutating call and every later one fail, changing nothing; Reboot()
// then turns the files into what a reboot would find: each file's unsynced
// changes undone (all of them, or all but a random first few), unsynced
// renames undone the same way, and files whose creation no SyncDir made
// durable removed. Reads pass through (they see what the page cache holds).
// For tests: thread-safe, and slow on purpose (every write first reads what
// it overwrites).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "store/env.h"

namespace impress::testing {

class PowerCutEnv final : public EnvWrapper {
 public:
  explicit PowerCutEnv(Env* base) : EnvWrapper(base) {}
  ~PowerCutEnv() override;

  // Calls that change files: creating opens, writes, syncs, truncates,
  // punches, renames, removes, directory syncs and creations. From the
  // n-th (1-based) on, each fails with IOError "power cut" and does nothing.
  void CutPowerAt(int64_t n);
  int64_t mutating_calls() const;
  bool power_cut() const;
  // What a reboot finds (call once no File of this Env is in use). With
  // `keep_some`, each file keeps a random first part of its unsynced changes
  // (and the directory its unsynced renames and creations), as a disk that
  // wrote some of its queue would; else none.
  Status Reboot(std::mt19937_64* rng, bool keep_some);

  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Status CreateDirs(const std::string& dir) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;

  // What one unsynced change overwrote: put `bytes` back at `offset`, then
  // cut or extend the file to `size`.
  struct Undo {
    uint64_t offset = 0;
    std::string bytes;
    uint64_t size = 0;
  };
  struct Node {  // one file, across renames
    std::string path;
    std::vector<Undo> unsynced;
    bool created = false;  // its directory entry is not yet durable
  };

  // A mutating call may go ahead (false after the cut: the call fails).
  bool Proceed();
  // Records what a change of [offset, offset+n) of `node` (a file of `size`
  // bytes, about to change) would overwrite.
  Status Remember(Node* node, uint64_t offset, uint64_t n);
  void Synced(Node* node);

 private:
  struct PendingRename {
    std::string from, to, backup;  // backup: the replaced `to`, moved aside ("" when there was none)
    std::shared_ptr<Node> node, replaced;
  };
  std::shared_ptr<Node> NodeFor(const std::string& path);

  mutable std::mutex mu_;
  int64_t calls_ = 0;
  int64_t cut_at_ = 0;  // 0: never
  std::map<std::string, std::shared_ptr<Node>> nodes_;  // by current path
  std::vector<PendingRename> renames_;
  int64_t backups_ = 0;
};

}  // namespace impress::testing
