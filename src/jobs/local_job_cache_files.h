// The local job cache's files: Salt's layout, the file helpers, and the bookkeeping of what a
// batch must make durable (LocalJobCache::SyncSet, LocalJobCache::Worker). Internal to
// src/jobs; shared by local_job_cache.cc (jobs, readers, cleanup), local_job_cache_files.cc
// (atomic file creation, jid directories) and local_job_cache_writer.cc (the group commit).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "halite/jobs/local_job_cache.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {
namespace local_fs {

inline constexpr std::string_view kJidFile = "jid";
inline constexpr std::string_view kLoadFile = ".load.p";
inline constexpr std::string_view kMinionsFile = ".minions.p";
inline constexpr std::string_view kReturnFile = "return.p";
inline constexpr std::string_view kOutFile = "out.p";
inline constexpr std::string_view kProbeDir = ".halite_probe";
// Everything the cache creates is the master's user's alone, whatever the umask (which can
// only take bits away): returns and job arguments may hold secrets.
inline constexpr mode_t kFileMode = 0600;
inline constexpr mode_t kDirMode = 0700;
// Salt file names inside a jid directory that a minion id must not shadow.
inline constexpr std::string_view kReservedNames[] = {"jid", "nocache", "endtime"};
inline constexpr std::size_t kMaxKnownJidDirs = 65536;
inline constexpr std::size_t kMaxFileBytes = 256u << 20;  // wire::UnpackLimits' default
inline constexpr std::size_t kMaxBatch = 1'000'000;
inline constexpr std::size_t kMaxIoThreads = 64;
// Below this many items a fan-out costs more in wake-ups than it saves.
inline constexpr std::size_t kMinFanOut = 8;

// Owns a file descriptor.

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  bool ok() const { return fd_ >= 0; }
  int get() const { return fd_; }
  void Reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // 0 or the errno of close(2), which matters for files written over NFS / FUSE.
  int Close() {
    const int rc = ::close(std::exchange(fd_, -1));
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_DIR, DT_REG, ... or DT_UNKNOWN
};

std::string ErrnoText(int err);
Error IoError(std::string_view what, std::string_view path, int err);
bool IsMissing(int err);
// 0 or an errno. The directory gets kDirMode (less the umask).
int MakeDir(const std::string& path);
// mkdir -p with kDirMode for every directory made; 0 or an errno.
int MakeDirs(const std::filesystem::path& path);
int WriteAll(int fd, std::string_view data);
// 0 and the contents in `out`, or an errno.
int ReadWholeFile(const std::string& path, std::string& out);
bool MaybeDir(const DirEntry& entry);
// 0 and the entries (without "." and ".."), or an errno.
int ListDir(const std::string& path, std::vector<DirEntry>& out);
std::chrono::system_clock::time_point ToTimePoint(const timespec& ts);
// A minion id becomes a directory name: no separators, nothing Salt's readers skip (dot
// names) and nothing that collides with the files of the jid directory.
bool IsStorableMinionId(std::string_view id);
bool IsMinionsFile(std::string_view name);
wire::Value ReturnRecord(const JobReturn& ret);

}  // namespace local_fs

// What a batch (or a SaveJob) must make durable before anyone is told it is stored.
class LocalJobCache::SyncSet {
 public:
  enum class FileSync {
    kAtCommit,      // batches: files are fsync'ed by Commit, in parallel
    kBeforeRename,  // SaveJob: a file is fsync'ed before its name appears, so it is never torn
  };

  SyncSet(FsyncMode mode, FileSync file_sync)
      : per_file_(mode == FsyncMode::kPerFile), file_sync_(file_sync) {}

  bool per_file() const { return per_file_; }
  bool fsync_before_rename() const { return per_file_ && file_sync_ == FileSync::kBeforeRename; }
  bool touched() const { return touched_; }

  // Something was written (or relied upon) under the store.
  void Touch() { touched_ = true; }
  // `dir` got a new entry.
  void AddDir(const std::string& dir) {
    touched_ = true;
    if (per_file_) dirs_.insert(dir);
  }
  // `path` was written.
  void AddFile(const std::string& path) {
    touched_ = true;
    if (per_file_ && file_sync_ == FileSync::kAtCommit) files_.push_back(path);
  }

  void MergeFrom(SyncSet& other) {
    touched_ = touched_ || other.touched_;
    files_.insert(files_.end(), std::make_move_iterator(other.files_.begin()),
                  std::make_move_iterator(other.files_.end()));
    dirs_.merge(other.dirs_);
    other.Clear();
  }
  void Clear() {
    touched_ = false;
    files_.clear();
    dirs_.clear();
  }
  // kPerFile: everything to fsync, files first.
  std::vector<std::string> Targets() const {
    std::vector<std::string> targets = files_;
    targets.insert(targets.end(), dirs_.begin(), dirs_.end());
    return targets;
  }

 private:
  const bool per_file_;
  const FileSync file_sync_;
  bool touched_ = false;
  std::vector<std::string> files_;
  std::set<std::string> dirs_;
};

// The state of one I/O thread; only that thread touches it.
struct LocalJobCache::Worker {
  explicit Worker(FsyncMode mode) : sync(mode, SyncSet::FileSync::kAtCommit) {}
  SyncSet sync;                                    // what this thread wrote in the batch
  std::unordered_set<std::string> known_jid_dirs;  // exist, with their jid file
  std::uint64_t known_generation = 0;              // clean_generation_ they were seen at
};

}  // namespace halite::jobs
