// GroupSync: makes file writes durable in batches, so that a storm of N writers pays for a
// few flushes instead of N fsyncs of the file plus N of its directory.
//
// A writer writes with Sync::kNone (keys/fs.h), reports the path with Wrote(), and asks
// AfterDurable() to tell it once the write is on stable storage. One flush covers every write
// reported before it started: one syncfs(2) of the file system that holds `dir`, or, where
// syncfs may not reach stable storage (NFS, SMB, FUSE, 9p), an fsync of every file reported
// and of its directory.
//
// Thread-safe. Wrote() and AfterDurable() never block on disk. A `done` callback runs at once
// on the caller's thread when nothing reported is still waiting for a flush, otherwise on the
// group-sync thread (named by Options::thread_name), so it must be quick: post work elsewhere.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "halite/common/result.h"

namespace halite::keys {

class GroupSync {
 public:
  // Makes durable the files (and their directories) it is given. The default is described
  // above; tests replace it.
  using Flush = std::function<Status(const std::vector<std::filesystem::path>& files)>;

  struct Options {
    std::filesystem::path dir;  // decides the file system (syncfs) or not (per-file fsync)
    std::string thread_name = "group-sync";
    Flush flush_for_test;  // empty: the real flush
  };

  // An error (from ErrnoError) when `dir` cannot be opened; it must exist.
  static Result<std::unique_ptr<GroupSync>> Open(Options options);
  // Runs Shutdown().
  ~GroupSync();
  GroupSync(const GroupSync&) = delete;
  GroupSync& operator=(const GroupSync&) = delete;

  // `file` was just written (created, replaced or renamed into place) without a sync.
  void Wrote(std::filesystem::path file);
  // Runs `done` once every file reported before this call is durable, with OkStatus, or with
  // the error of the flush that should have made it so (a later call flushes again). After
  // Shutdown, `done` runs at once with OkStatus if nothing is unflushed, else Unavailable.
  void AfterDurable(std::function<void(Status)> done);
  // Flushes what is reported, runs every waiting callback and stops the thread. Idempotent.
  void Shutdown();

  // Flushes done so far (for tests and metrics).
  std::uint64_t flushes() const;

 private:
  struct Waiter {
    std::uint64_t covers;  // durable once flushed_ >= covers
    std::function<void(Status)> done;
  };

  GroupSync(Options options, int dir_fd, bool per_file);
  void Run();
  Status DefaultFlush(const std::vector<std::filesystem::path>& files) const;

  const Options options_;
  const int dir_fd_;     // options_.dir, open for the object's lifetime
  const bool per_file_;  // fsync each file and directory instead of one syncfs
  Flush flush_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t written_ HALITE_GUARDED_BY(mu_) = 0;                     // writes reported so far
  std::uint64_t flushed_ HALITE_GUARDED_BY(mu_) = 0;                     // writes known durable
  std::vector<std::filesystem::path> unflushed_ HALITE_GUARDED_BY(mu_);  // per_file_ only
  std::vector<Waiter> waiters_ HALITE_GUARDED_BY(mu_);
  std::uint64_t flush_count_ HALITE_GUARDED_BY(mu_) = 0;
  bool stopping_ HALITE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace halite::keys
