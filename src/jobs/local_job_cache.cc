#include "halite/jobs/local_job_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <set>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "halite/common/file_system.h"
#include "halite/jobs/job_summary.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {
namespace {

constexpr std::string_view kJidFile = "jid";
constexpr std::string_view kLoadFile = ".load.p";
constexpr std::string_view kMinionsFile = ".minions.p";
constexpr std::string_view kReturnFile = "return.p";
constexpr std::string_view kOutFile = "out.p";
constexpr std::string_view kProbeDir = ".halite_probe";
// Salt file names inside a jid directory that a minion id must not shadow.
constexpr std::string_view kReservedNames[] = {"jid", "nocache", "endtime"};
constexpr std::size_t kMaxKnownJidDirs = 65536;
constexpr std::size_t kMaxFileBytes = 256u << 20;  // wire::UnpackLimits' default
constexpr std::size_t kMaxBatch = 1'000'000;
constexpr std::size_t kMaxIoThreads = 64;
// Below this many items a fan-out costs more in wake-ups than it saves.
constexpr std::size_t kMinFanOut = 8;

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

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

Error IoError(std::string_view what, std::string_view path, int err) {
  std::string message = std::string(what) + " " + std::string(path) + ": " + ErrnoText(err);
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return Error::ResourceExhausted(std::move(message));
    case EACCES:
    case EPERM:
      return Error::PermissionDenied(std::move(message));
    default:
      return Error::Unavailable(std::move(message));
  }
}

bool IsMissing(int err) { return err == ENOENT || err == ENOTDIR; }

int MakeDir(const std::string& path) { return ::mkdir(path.c_str(), 0777) == 0 ? 0 : errno; }

int WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

// 0 and the contents in `out`, or an errno.
int ReadWholeFile(const std::string& path, std::string& out) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return errno;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxFileBytes) return EFBIG;
  // One byte more than the size, so that a file that grew is noticed.
  out.assign(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t length = 0;
  for (;;) {
    if (length == out.size()) {
      if (out.size() > kMaxFileBytes) return EFBIG;
      out.resize(out.size() * 2);
    }
    const ssize_t n = ::read(fd.get(), out.data() + length, out.size() - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    length += static_cast<std::size_t>(n);
  }
  out.resize(length);
  return 0;
}

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_DIR, DT_REG, ... or DT_UNKNOWN
};

bool MaybeDir(const DirEntry& entry) { return entry.type == DT_DIR || entry.type == DT_UNKNOWN; }

// 0 and the entries (without "." and ".."), or an errno.
int ListDir(const std::string& path, std::vector<DirEntry>& out) {
  out.clear();
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return errno;
  int err = 0;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      err = errno;
      break;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    out.push_back({std::string(name), entry->d_type});
  }
  ::closedir(dir);
  return err;
}

std::chrono::system_clock::time_point ToTimePoint(const timespec& ts) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

// A minion id becomes a directory name: no separators, nothing Salt's readers skip (dot
// names) and nothing that collides with the files of the jid directory.
bool IsStorableMinionId(std::string_view id) {
  if (id.empty() || id.size() > NAME_MAX || id.front() == '.') return false;
  if (id.find('/') != std::string_view::npos || id.find('\0') != std::string_view::npos) {
    return false;
  }
  return std::find(std::begin(kReservedNames), std::end(kReservedNames), id) ==
         std::end(kReservedNames);
}

bool IsMinionsFile(std::string_view name) {
  // ".minions.p" and the syndics' ".minions.<syndic_id>.p".
  return name == kMinionsFile || (name.starts_with(".minions.") && name.ends_with(".p"));
}

wire::Value ReturnRecord(const JobReturn& ret) {
  wire::Map record;
  record.emplace_back(wire::Value("return"), ret.ret);
  if (ret.retcode.has_value())
    record.emplace_back(wire::Value("retcode"), wire::Value(*ret.retcode));
  if (ret.success.has_value())
    record.emplace_back(wire::Value("success"), wire::Value(*ret.success));
  return wire::Value(std::move(record));
}

}  // namespace

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

Result<std::unique_ptr<LocalJobCache>> LocalJobCache::Open(const LocalJobCacheOptions& options) {
  if (options.cachedir.empty()) return Error::InvalidArgument("local_cache: cachedir is empty");
  if (options.batch_max == 0 || options.batch_max > kMaxBatch) {
    return Error::InvalidArgument("local_cache: batch_max must be between 1 and " +
                                  std::to_string(kMaxBatch));
  }
  if (options.max_delay.count() < 0) {
    return Error::InvalidArgument("local_cache: max_delay must not be negative");
  }
  if (options.io_threads == 0 || options.io_threads > kMaxIoThreads) {
    return Error::InvalidArgument("local_cache: io_threads must be between 1 and " +
                                  std::to_string(kMaxIoThreads));
  }
  const std::filesystem::path jobs = options.cachedir / "jobs";
  std::error_code ec;
  std::filesystem::create_directories(jobs, ec);
  if (ec) return Error::Unavailable("create " + jobs.string() + ": " + ec.message());

  FsyncMode mode = options.fsync_mode;
  struct statfs fs {};
  if (mode == FsyncMode::kSyncfs && ::statfs(jobs.c_str(), &fs) == 0 &&
      SyncfsMayNotPersist(static_cast<unsigned long>(fs.f_type))) {
    spdlog::warn(
        "job cache: {} is on a network or FUSE file system where syncfs may not persist "
        "data; using fsync_mode per_file",
        jobs.string());
    mode = FsyncMode::kPerFile;
  }
  return std::unique_ptr<LocalJobCache>(new LocalJobCache(options, mode));
}

LocalJobCache::LocalJobCache(const LocalJobCacheOptions& options, FsyncMode fsync_mode)
    : options_(options),
      fsync_mode_(fsync_mode),
      cachedir_(options.cachedir.string()),
      jobs_dir_((options.cachedir / "jobs").string()),
      temp_tag_(wire::RandomNonce().substr(0, 12)) {
  for (std::size_t i = 0; i < options_.io_threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(fsync_mode_));
  }
  for (std::size_t i = 1; i < options_.io_threads; ++i) {
    helpers_.emplace_back([this, i] { HelperMain(i); });
    pthread_setname_np(helpers_.back().native_handle(), ("jobs-io-" + std::to_string(i)).c_str());
  }
  writer_ = std::thread([this] { WriterMain(); });
  pthread_setname_np(writer_.native_handle(), "jobs-writer");
}

LocalJobCache::~LocalJobCache() { Shutdown(); }

void LocalJobCache::Shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) {
    HALITE_CHECK(writer_.get_id() != std::this_thread::get_id())
        << "JobCache::Shutdown called from a StoreCallback";
    writer_.join();
  }
  // The writer is gone, so no fan-out is running.
  {
    std::lock_guard<std::mutex> lock(fan_mu_);
    fan_stop_ = true;
  }
  fan_cv_.notify_all();
  for (std::thread& helper : helpers_) {
    if (helper.joinable()) helper.join();
  }
}

std::string LocalJobCache::JidPath(std::string_view hash) const {
  std::string path;
  path.reserve(jobs_dir_.size() + hash.size() + 2);
  path.append(jobs_dir_).append("/").append(hash.substr(0, 2)).append("/").append(hash.substr(2));
  return path;
}

Result<std::optional<bool>> LocalJobCache::LinkNewFile(const std::string& dir,
                                                       const std::string& final_path,
                                                       std::string_view data, SyncSet& sync) {
  Fd fd(::open(dir.c_str(), O_WRONLY | O_TMPFILE | O_CLOEXEC, 0666));
  if (!fd.ok()) {
    const int err = errno;
    if (err == EOPNOTSUPP || err == EISDIR || err == EINVAL) {
      tmpfile_unsupported_.store(true, std::memory_order_relaxed);
      return std::optional<bool>();
    }
    return IoError("create a file in", dir, err);
  }
  sync.Touch();
  if (const int err = WriteAll(fd.get(), data); err != 0) return IoError("write", final_path, err);
  if (sync.fsync_before_rename() && ::fsync(fd.get()) != 0) {
    return IoError("fsync", final_path, errno);
  }
  // linkat never replaces: EEXIST means somebody else's file is there.
  int err = 0;
  const bool via_proc = link_via_proc_.load(std::memory_order_relaxed);
  if (!via_proc && ::linkat(fd.get(), "", AT_FDCWD, final_path.c_str(), AT_EMPTY_PATH) != 0) {
    err = errno;
  }
  if (via_proc || err == ENOENT || err == EPERM) {
    // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link does not.
    const std::string proc_path = "/proc/self/fd/" + std::to_string(fd.get());
    const int empty_path_err = err;
    err =
        ::linkat(AT_FDCWD, proc_path.c_str(), AT_FDCWD, final_path.c_str(), AT_SYMLINK_FOLLOW) == 0
            ? 0
            : errno;
    if (err == 0 && empty_path_err != 0) link_via_proc_.store(true, std::memory_order_relaxed);
    if ((err == ENOENT || err == EPERM) && empty_path_err != 0) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0) {  // the directory is there: no way to link (no /proc)
        tmpfile_unsupported_.store(true, std::memory_order_relaxed);
        return std::optional<bool>();
      }
    }
  }
  if (err == EEXIST) return std::optional<bool>(false);
  if (err != 0) return IoError("link", final_path, err);
  if (const int close_err = fd.Close(); close_err != 0) {
    return IoError("close", final_path, close_err);
  }
  sync.AddFile(final_path);
  sync.AddDir(dir);
  return std::optional<bool>(true);
}

Result<bool> LocalJobCache::WriteFileAtomic(const std::string& dir, std::string_view name,
                                            std::string_view data, bool replace, SyncSet& sync) {
  const std::string final_path = dir + "/" + std::string(name);
  if (!replace && !tmpfile_unsupported_.load(std::memory_order_relaxed)) {
    HALITE_ASSIGN_OR_RETURN(const std::optional<bool> linked,
                            LinkNewFile(dir, final_path, data, sync));
    if (linked.has_value()) return *linked;
  }
  std::string temp_path;
  Fd fd;
  // Dot names: Salt's readers skip them, so a temp file is never mistaken for a minion.
  for (int attempt = 0; attempt < 4 && !fd.ok(); ++attempt) {
    temp_path = dir + "/." + std::string(name) + ".tmp." + temp_tag_ + "." +
                std::to_string(temp_counter_.fetch_add(1, std::memory_order_relaxed));
    fd.Reset(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd.ok() && errno != EEXIST) return IoError("create", temp_path, errno);
  }
  if (!fd.ok()) return Error::Internal("no free temp file name in " + dir);
  sync.Touch();
  auto fail = [&temp_path](std::string_view what, const std::string& path, int err) {
    ::unlink(temp_path.c_str());
    return IoError(what, path, err);
  };
  if (const int err = WriteAll(fd.get(), data); err != 0) return fail("write", temp_path, err);
  if (sync.fsync_before_rename() && ::fsync(fd.get()) != 0) {
    return fail("fsync", temp_path, errno);
  }
  if (const int err = fd.Close(); err != 0) return fail("close", temp_path, err);

  bool installed = true;
  if (replace) {
    if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
      return fail("rename to", final_path, errno);
    }
  } else {
    int err = EINVAL;
    if (!noreplace_rename_unsupported_.load(std::memory_order_relaxed)) {
      err = ::renameat2(AT_FDCWD, temp_path.c_str(), AT_FDCWD, final_path.c_str(),
                        RENAME_NOREPLACE) == 0
                ? 0
                : errno;
      if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
        noreplace_rename_unsupported_.store(true, std::memory_order_relaxed);
      }
    }
    if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
      // link(2) never replaces either, and works where renameat2 flags do not (NFS, FUSE).
      err = ::link(temp_path.c_str(), final_path.c_str()) == 0 ? 0 : errno;
      ::unlink(temp_path.c_str());
    }
    if (err == EEXIST) {
      ::unlink(temp_path.c_str());
      installed = false;
    } else if (err != 0) {
      return fail("rename to", final_path, err);
    }
  }
  if (installed) {
    sync.AddFile(final_path);
    sync.AddDir(dir);
  }
  return installed;
}

Status LocalJobCache::PrepareJidDir(std::string_view jid, const std::string& hash, SyncSet& sync) {
  const std::string jid_dir = JidPath(hash);
  const std::string top_dir = jobs_dir_ + "/" + hash.substr(0, 2);
  int err = MakeDir(jid_dir);
  if (err == ENOENT) {
    int top_err = MakeDir(top_dir);
    if (top_err == ENOENT) {
      // Only <cachedir>/jobs is re-created, never the cachedir itself.
      const int jobs_err = MakeDir(jobs_dir_);
      if (jobs_err != 0 && jobs_err != EEXIST) return IoError("mkdir", jobs_dir_, jobs_err);
      if (jobs_err == 0) sync.AddDir(cachedir_);
      top_err = MakeDir(top_dir);
    }
    if (top_err != 0 && top_err != EEXIST) return IoError("mkdir", top_dir, top_err);
    if (top_err == 0) sync.AddDir(jobs_dir_);
    err = MakeDir(jid_dir);
  }
  if (err != 0 && err != EEXIST) return IoError("mkdir", jid_dir, err);
  if (err == 0) {
    sync.AddDir(top_dir);
  } else {
    struct stat st {};
    const std::string jid_path = jid_dir + "/" + std::string(kJidFile);
    if (::stat(jid_path.c_str(), &st) == 0) return OkStatus();
    if (errno != ENOENT) return IoError("stat", jid_path, errno);
  }
  // No replace: the first jid file's ctime is the job's age.
  HALITE_RETURN_IF_ERROR(WriteFileAtomic(jid_dir, kJidFile, jid, /*replace=*/false, sync));
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Returns: the writer thread and its helpers.

void LocalJobCache::StoreReturn(JobReturn ret, StoreCallback done) {
  ret.load = wire::Value();  // not stored; no need to keep it queued
  bool accepted = false;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(Pending{std::move(ret), std::move(done), std::chrono::steady_clock::now()});
      accepted = true;
      wake = queue_.size() == 1 || queue_.size() >= options_.batch_max;
    }
  }
  if (!accepted) {
    done(Error::FailedPrecondition("job cache is shut down"));
    return;
  }
  if (wake) cv_.notify_one();
}

void LocalJobCache::WriterMain() {
  try {
    std::deque<Pending> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) return;  // stopping, and everything queued is done
        if (options_.max_delay.count() > 0 && !stopping_ && queue_.size() < options_.batch_max) {
          const auto deadline = queue_.front().queued + options_.max_delay;
          cv_.wait_until(lock, deadline,
                         [this] { return stopping_ || queue_.size() >= options_.batch_max; });
        }
        if (queue_.size() <= options_.batch_max) {
          batch.swap(queue_);
        } else {
          for (std::size_t i = 0; i < options_.batch_max; ++i) {
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
          }
        }
      }
      WriteBatch(batch);
      batch.clear();
    }
  } catch (const std::exception& e) {
    spdlog::critical("jobs-writer: uncaught exception: {}", e.what());
    std::abort();
  } catch (...) {
    spdlog::critical("jobs-writer: uncaught exception");
    std::abort();
  }
}

void LocalJobCache::HelperMain(std::size_t index) {
  try {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(Worker&)>* fn = nullptr;
      {
        std::unique_lock<std::mutex> lock(fan_mu_);
        fan_cv_.wait(lock, [&] { return fan_stop_ || fan_generation_ != seen; });
        if (fan_stop_) return;
        seen = fan_generation_;
        fn = fan_fn_;
      }
      (*fn)(*workers_[index]);
      std::lock_guard<std::mutex> lock(fan_mu_);
      if (--fan_pending_ == 0) fan_done_cv_.notify_one();
    }
  } catch (const std::exception& e) {
    spdlog::critical("jobs-io: uncaught exception: {}", e.what());
    std::abort();
  } catch (...) {
    spdlog::critical("jobs-io: uncaught exception");
    std::abort();
  }
}

void LocalJobCache::FanOut(const std::function<void(Worker&)>& fn) {
  if (helpers_.empty()) {
    fn(*workers_[0]);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(fan_mu_);
    fan_fn_ = &fn;
    ++fan_generation_;
    fan_pending_ = helpers_.size();
  }
  fan_cv_.notify_all();
  fn(*workers_[0]);
  std::unique_lock<std::mutex> lock(fan_mu_);
  fan_done_cv_.wait(lock, [this] { return fan_pending_ == 0; });
  fan_fn_ = nullptr;
}

void LocalJobCache::WriteBatch(std::deque<Pending>& batch) {
  const std::size_t n = batch.size();
  std::vector<Result<StoreOutcome>> outcomes(n, Error::Internal("not written"));
  std::atomic<std::size_t> next{0};
  const std::function<void(Worker&)> write = [&](Worker& worker) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      outcomes[i] = WriteReturn(batch[i].ret, worker);
    }
  };
  if (n < kMinFanOut) {
    write(*workers_[0]);
  } else {
    FanOut(write);
  }

  SyncSet sync(fsync_mode_, SyncSet::FileSync::kAtCommit);
  for (const std::unique_ptr<Worker>& worker : workers_) sync.MergeFrom(worker->sync);
  if (Status durable = Commit(sync, /*fan_out=*/true); !durable.ok()) {
    spdlog::error("job cache: a batch of {} returns is not durable: {}", n,
                  durable.error().ToString());
    for (const std::unique_ptr<Worker>& worker : workers_) worker->known_jid_dirs.clear();
    for (Result<StoreOutcome>& outcome : outcomes) {
      if (outcome.ok()) outcome = durable.error().WithContext("return not durable");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (batch[i].done) batch[i].done(std::move(outcomes[i]));
  }
}

Status LocalJobCache::Commit(SyncSet& sync, bool fan_out) {
  if (!sync.touched()) return OkStatus();
  if (!sync.per_file()) {
    Fd fd(::open(jobs_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok()) return IoError("open", jobs_dir_, errno);
    if (::syncfs(fd.get()) != 0) return IoError("syncfs", jobs_dir_, errno);
    return OkStatus();
  }
  const std::vector<std::string> targets = sync.Targets();
  std::atomic<std::size_t> next{0};
  std::mutex error_mu;
  std::optional<Error> first_error;
  const std::function<void(Worker&)> fsync_all = [&](Worker&) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < targets.size();) {
      const std::string& path = targets[i];
      Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      const int err = !fd.ok() ? errno : (::fsync(fd.get()) != 0 ? errno : 0);
      if (err != 0) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!first_error) first_error = IoError("fsync", path, err);
      }
    }
  };
  // Parallel fsyncs share journal commits (ext4) and round trips (network file systems).
  if (fan_out && targets.size() >= kMinFanOut) {
    FanOut(fsync_all);
  } else {
    fsync_all(*workers_[0]);
  }
  if (first_error) return *std::move(first_error);
  return OkStatus();
}

Result<StoreOutcome> LocalJobCache::WriteReturn(const JobReturn& ret, Worker& worker) {
  if (ret.jid.empty()) return Error::InvalidArgument("return without a jid");
  if (!IsStorableMinionId(ret.minion_id)) {
    return Error::InvalidArgument("minion id '" + ret.minion_id + "' cannot be stored");
  }
  if (const std::uint64_t generation = clean_generation_.load(std::memory_order_acquire);
      generation != worker.known_generation) {
    worker.known_jid_dirs.clear();
    worker.known_generation = generation;
  }
  SyncSet& sync = worker.sync;
  const std::string hash = wire::Sha256Hex(ret.jid);
  const std::string jid_dir = JidPath(hash);
  const std::string minion_dir = jid_dir + "/" + ret.minion_id;

  int err = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!worker.known_jid_dirs.contains(jid_dir)) {
      HALITE_RETURN_IF_ERROR(PrepareJidDir(ret.jid, hash, sync));
      if (worker.known_jid_dirs.size() >= kMaxKnownJidDirs) worker.known_jid_dirs.clear();
      worker.known_jid_dirs.insert(jid_dir);
    }
    err = MakeDir(minion_dir);
    if (err != ENOENT) break;
    // Removed under us (a cleanup, maybe on another master): make it again.
    worker.known_jid_dirs.erase(jid_dir);
  }

  bool replace = false;
  if (err == 0) {
    sync.AddDir(jid_dir);
  } else if (err == EEXIST) {
    // Salt's replay rule: the directory says a return was seen. It counts only if it is
    // complete; without a return.p another writer is between its mkdir and its link (the
    // no-replace link below decides), or crashed there.
    const std::string return_path = minion_dir + "/" + std::string(kReturnFile);
    std::string existing;
    const int read_err = ReadWholeFile(return_path, existing);
    if (read_err == 0 && !existing.empty() && wire::Unpack(existing).ok()) {
      sync.Touch();  // the first copy may still be in flight: make it durable before saying so
      return StoreOutcome::kDuplicate;
    }
    if (read_err != 0 && read_err != ENOENT) return IoError("read", return_path, read_err);
    sync.AddDir(jid_dir);  // our return.p will depend on that directory entry too
    if (read_err == 0) {
      // A torn file: its batch never became durable, so it was never acknowledged.
      spdlog::warn("job cache: replacing the unreadable {}", return_path);
      replace = true;
    }
  } else {
    return IoError("mkdir", minion_dir, err);
  }

  // out.p first: return.p is what makes the return visible (and a duplicate).
  if (!ret.out.empty()) {
    HALITE_RETURN_IF_ERROR(
        WriteFileAtomic(minion_dir, kOutFile,
                        wire::Pack(wire::Value(ret.out), wire::Packing::kBinType), replace, sync));
  }
  HALITE_ASSIGN_OR_RETURN(
      const bool installed,
      WriteFileAtomic(minion_dir, kReturnFile,
                      wire::Pack(ReturnRecord(ret), wire::Packing::kBinType), replace, sync));
  return installed ? StoreOutcome::kStored : StoreOutcome::kDuplicate;
}

// ---------------------------------------------------------------------------------------------
// Jobs and readers: the caller's thread.

Status LocalJobCache::SaveJob(const Job& job) {
  if (job.jid.empty()) return Error::InvalidArgument("job without a jid");
  if (!job.load.is_map()) return Error::InvalidArgument("job " + job.jid + ": load is not a map");
  wire::Value load = job.load;
  load.Erase("key");  // the master's root key never reaches the disk
  // Salt's jobs.list_jobs reads load["jid"] and fails on the whole listing without it.
  if (load.Find("jid") == nullptr) load.Set("jid", wire::Value(job.jid));

  SyncSet sync(fsync_mode_, SyncSet::FileSync::kBeforeRename);
  const std::string hash = wire::Sha256Hex(job.jid);
  const std::string jid_dir = JidPath(hash);
  HALITE_RETURN_IF_ERROR(PrepareJidDir(job.jid, hash, sync));
  HALITE_RETURN_IF_ERROR(WriteFileAtomic(
      jid_dir, kLoadFile, wire::Pack(load, wire::Packing::kBinType), /*replace=*/true, sync));

  {
    // Read-merge-write of .minions.p, serialised across threads and processes (other masters
    // on the shared directory) by a lock on the jid directory. Where the file system has no
    // flock, concurrent merges from two masters may lose one side's extra minions.
    Fd dir_fd(::open(jid_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.ok()) return IoError("open", jid_dir, errno);
    while (::flock(dir_fd.get(), LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      spdlog::debug("job cache: flock {}: {}", jid_dir, ErrnoText(errno));
      break;
    }
    std::set<std::string> minions(job.minions.begin(), job.minions.end());
    const std::string minions_path = jid_dir + "/" + std::string(kMinionsFile);
    std::string bytes;
    if (const int err = ReadWholeFile(minions_path, bytes); err == 0) {
      Result<wire::Value> saved = wire::Unpack(bytes);
      if (saved.ok() && saved->is_array()) {
        for (const wire::Value& minion : *saved->array()) {
          if (const std::string* id = minion.str()) minions.insert(*id);
        }
      } else {
        spdlog::warn("job cache: replacing the unreadable {}", minions_path);
      }
    } else if (err != ENOENT) {
      return IoError("read", minions_path, err);
    }
    wire::Array list;
    list.reserve(minions.size());
    for (const std::string& minion : minions) list.emplace_back(minion);
    HALITE_RETURN_IF_ERROR(WriteFileAtomic(
        jid_dir, kMinionsFile, wire::Pack(wire::Value(std::move(list)), wire::Packing::kBinType),
        /*replace=*/true, sync));
  }  // closing the descriptor releases the lock
  return Commit(sync, /*fan_out=*/false);
}

Result<Job> LocalJobCache::LoadJob(std::string_view jid) {
  if (jid.empty()) return Error::NotFound("no job with an empty jid");
  const std::string jid_dir = JidPath(wire::Sha256Hex(jid));
  const std::string load_path = jid_dir + "/" + std::string(kLoadFile);
  std::string bytes;
  if (const int err = ReadWholeFile(load_path, bytes); err != 0) {
    if (IsMissing(err)) return Error::NotFound("no job " + std::string(jid));
    return IoError("read", load_path, err);
  }
  Result<wire::Value> load = wire::Unpack(bytes);
  if (!load.ok()) return Error::DataLoss(load_path + ": " + load.error().message);
  if (!load->is_map()) return Error::DataLoss(load_path + ": not a map");

  Job job;
  job.jid = std::string(jid);
  job.load = std::move(load).value();
  std::vector<DirEntry> entries;
  if (const int err = ListDir(jid_dir, entries); err != 0) return IoError("list", jid_dir, err);
  std::set<std::string> minions;
  for (const DirEntry& entry : entries) {
    if (!IsMinionsFile(entry.name)) continue;
    const std::string path = jid_dir + "/" + entry.name;
    if (const int err = ReadWholeFile(path, bytes); err != 0) {
      if (IsMissing(err)) continue;
      return IoError("read", path, err);
    }
    Result<wire::Value> list = wire::Unpack(bytes);
    if (!list.ok()) return Error::DataLoss(path + ": " + list.error().message);
    if (!list->is_array()) return Error::DataLoss(path + ": not a list");
    for (const wire::Value& minion : *list->array()) {
      if (const std::string* id = minion.str()) minions.insert(*id);
    }
  }
  job.minions.assign(minions.begin(), minions.end());
  return job;
}

Result<std::vector<JobReturn>> LocalJobCache::LoadReturns(std::string_view jid) {
  if (jid.empty()) return Error::NotFound("no job with an empty jid");
  const std::string jid_dir = JidPath(wire::Sha256Hex(jid));
  std::vector<DirEntry> entries;
  if (const int err = ListDir(jid_dir, entries); err != 0) {
    if (IsMissing(err)) return Error::NotFound("no job " + std::string(jid));
    return IoError("list", jid_dir, err);
  }
  std::vector<JobReturn> returns;
  std::string bytes;
  for (const DirEntry& entry : entries) {
    if (entry.name.front() == '.' || !MaybeDir(entry)) continue;
    const std::string minion_dir = jid_dir + "/" + entry.name;
    const std::string return_path = minion_dir + "/" + std::string(kReturnFile);
    if (const int err = ReadWholeFile(return_path, bytes); err != 0) {
      if (IsMissing(err)) continue;  // not a minion, or a return still being written
      return IoError("read", return_path, err);
    }
    Result<wire::Value> record = wire::Unpack(bytes);
    if (!record.ok()) {
      // Only a crash before the batch was durable leaves one; it was never acknowledged.
      spdlog::warn("job cache: skipping the unreadable {}: {}", return_path,
                   record.error().message);
      continue;
    }
    JobReturn ret;
    ret.jid = std::string(jid);
    ret.minion_id = entry.name;
    if (const wire::Value* value = record->Find("return")) {
      ret.ret = *value;
      if (const wire::Value* retcode = record->Find("retcode")) ret.retcode = retcode->int64();
      if (const wire::Value* success = record->Find("success")) ret.success = success->boolean();
    } else {
      ret.ret = std::move(record).value();  // Salt's old format: return.p holds the bare return
    }
    const std::string out_path = minion_dir + "/" + std::string(kOutFile);
    if (ReadWholeFile(out_path, bytes) == 0) {
      if (Result<wire::Value> out = wire::Unpack(bytes); out.ok() && out->str() != nullptr) {
        ret.out = *out->str();
      }
    }
    returns.push_back(std::move(ret));
  }
  std::sort(returns.begin(), returns.end(),
            [](const JobReturn& a, const JobReturn& b) { return a.minion_id < b.minion_id; });
  return returns;
}

Result<std::vector<JobSummary>> LocalJobCache::ListJobs() {
  std::vector<DirEntry> tops;
  if (const int err = ListDir(jobs_dir_, tops); err != 0) return IoError("list", jobs_dir_, err);
  std::vector<JobSummary> jobs;
  std::vector<DirEntry> finals;
  std::string bytes;
  for (const DirEntry& top : tops) {
    if (!MaybeDir(top)) continue;
    const std::string top_dir = jobs_dir_ + "/" + top.name;
    if (const int err = ListDir(top_dir, finals); err != 0) {
      if (IsMissing(err)) continue;  // removed by a cleanup meanwhile
      return IoError("list", top_dir, err);
    }
    for (const DirEntry& final_entry : finals) {
      if (!MaybeDir(final_entry)) continue;
      const std::string jid_dir = top_dir + "/" + final_entry.name;
      const std::string load_path = jid_dir + "/" + std::string(kLoadFile);
      if (const int err = ReadWholeFile(load_path, bytes); err != 0) {
        if (IsMissing(err)) continue;
        return IoError("read", load_path, err);
      }
      Result<wire::Value> load = wire::Unpack(bytes);
      if (!load.ok() || !load->is_map()) {
        spdlog::warn("job cache: skipping the unreadable {}", load_path);
        continue;
      }
      std::string jid;
      if (ReadWholeFile(jid_dir + "/" + std::string(kJidFile), bytes) == 0 && !bytes.empty()) {
        jid = bytes;
      } else if (const std::string* load_jid = load->FindStr("jid")) {
        jid = *load_jid;
      } else {
        continue;
      }
      jobs.push_back(SummarizeJob(jid, *load));
    }
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const JobSummary& a, const JobSummary& b) { return a.jid < b.jid; });
  return jobs;
}

Result<std::size_t> LocalJobCache::CleanOld(std::chrono::seconds keep,
                                            std::chrono::system_clock::time_point now) {
  if (keep.count() <= 0) return std::size_t{0};
  auto is_old = [&](const struct stat& st) { return now - ToTimePoint(st.st_ctim) > keep; };

  std::vector<DirEntry> tops;
  if (const int err = ListDir(jobs_dir_, tops); err != 0) {
    if (err == ENOENT) return std::size_t{0};
    return IoError("list", jobs_dir_, err);
  }
  std::size_t removed = 0;
  std::vector<std::string> empty_tops;
  std::vector<DirEntry> finals;
  struct stat st {};
  for (const DirEntry& top : tops) {
    if (!MaybeDir(top)) continue;
    const std::string top_dir = jobs_dir_ + "/" + top.name;
    if (ListDir(top_dir, finals) != 0) continue;
    if (finals.empty()) {
      empty_tops.push_back(top_dir);
      continue;
    }
    for (const DirEntry& final_entry : finals) {
      if (!MaybeDir(final_entry)) continue;
      const std::string jid_dir = top_dir + "/" + final_entry.name;
      const std::string jid_path = jid_dir + "/" + std::string(kJidFile);
      bool remove = false;
      if (::stat(jid_path.c_str(), &st) == 0) {
        remove = is_old(st);
      } else if (errno == ENOENT) {
        // No jid file: a corrupt entry, or one a writer is creating right now.
        remove = ::stat(jid_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && is_old(st);
      }
      if (!remove) continue;
      std::error_code ec;
      std::filesystem::remove_all(jid_dir, ec);
      if (ec) {
        spdlog::error("job cache: cannot remove {}: {}", jid_dir, ec.message());
        continue;
      }
      ++removed;
    }
  }
  // Empty first-level directories go once they are old too; rmdir (not a recursive remove)
  // leaves one alone that a writer has just put a job in.
  for (const std::string& top_dir : empty_tops) {
    if (::stat(top_dir.c_str(), &st) == 0 && is_old(st)) ::rmdir(top_dir.c_str());
  }
  clean_generation_.fetch_add(1, std::memory_order_acq_rel);
  return removed;
}

Status LocalJobCache::Check() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Error::FailedPrecondition("job cache is shut down");
  }
  // The probe lives in a directory of its own, two levels down like a job, so that Salt's
  // cleaner (which expects only directories there) can remove a leftover.
  const std::string probe_root = jobs_dir_ + "/" + std::string(kProbeDir);
  int err = MakeDir(probe_root);
  if (err == ENOENT) {
    if (const int jobs_err = MakeDir(jobs_dir_); jobs_err != 0 && jobs_err != EEXIST) {
      return IoError("mkdir", jobs_dir_, jobs_err);
    }
    err = MakeDir(probe_root);
  }
  if (err != 0 && err != EEXIST) return IoError("mkdir", probe_root, err);
  const std::string probe_dir =
      probe_root + "/" + temp_tag_ + "." +
      std::to_string(temp_counter_.fetch_add(1, std::memory_order_relaxed));
  if (const int dir_err = MakeDir(probe_dir); dir_err != 0) {
    return IoError("mkdir", probe_dir, dir_err);
  }
  const std::string probe_path = probe_dir + "/probe";
  const std::string token = wire::RandomNonce();
  Status status = [&]() -> Status {
    Fd fd(::open(probe_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd.ok()) return IoError("create", probe_path, errno);
    if (const int write_err = WriteAll(fd.get(), token); write_err != 0) {
      return IoError("write", probe_path, write_err);
    }
    if (const int close_err = fd.Close(); close_err != 0) {
      return IoError("close", probe_path, close_err);
    }
    std::string read_back;
    if (const int read_err = ReadWholeFile(probe_path, read_back); read_err != 0) {
      return IoError("read", probe_path, read_err);
    }
    if (read_back != token) return Error::DataLoss(probe_path + ": read back different bytes");
    return OkStatus();
  }();
  ::unlink(probe_path.c_str());
  ::rmdir(probe_dir.c_str());
  return status;
}

}  // namespace halite::jobs
