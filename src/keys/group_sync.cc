#include "halite/keys/group_sync.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "halite/common/file_system.h"
#include "halite/keys/fs.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

Status FsyncPath(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open '" + path.string() + "' to fsync it");
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the entry is there all the same.
  if (err == EINVAL && (flags & O_DIRECTORY) != 0) err = 0;
  if (err != 0) return ErrnoError(err, "fsync '" + path.string() + "'");
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<GroupSync>> GroupSync::Open(Options options) {
  // Kept open: syncfs reports a write-back error to each open file once, so an error that
  // happens between two flushes still reaches the next one.
  const int fd = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "group sync: open '" + options.dir.string() + "'");
  struct statfs st {};
  if (::fstatfs(fd, &st) != 0) {
    Error error = ErrnoError(errno, "group sync: statfs '" + options.dir.string() + "'");
    ::close(fd);
    return error;
  }
  const bool per_file = SyncfsMayNotPersist(static_cast<unsigned long>(st.f_type));
  return std::unique_ptr<GroupSync>(new GroupSync(std::move(options), fd, per_file));
}

GroupSync::GroupSync(Options options, int dir_fd, bool per_file)
    : options_(std::move(options)), dir_fd_(dir_fd), per_file_(per_file) {
  flush_ = options_.flush_for_test
               ? options_.flush_for_test
               : Flush([this](const std::vector<fs::path>& files) { return DefaultFlush(files); });
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), options_.thread_name.substr(0, 15).c_str());
}

GroupSync::~GroupSync() {
  Shutdown();
  ::close(dir_fd_);
}

void GroupSync::Wrote(fs::path file) {
  std::lock_guard lock(mu_);
  ++written_;
  if (per_file_ || options_.flush_for_test) unflushed_.push_back(std::move(file));
}

void GroupSync::AfterDurable(std::function<void(Status)> done) {
  Status now = OkStatus();
  {
    std::lock_guard lock(mu_);
    if (flushed_ < written_) {
      if (!stopping_) {
        waiters_.push_back(Waiter{written_, std::move(done)});
        cv_.notify_one();
        return;
      }
      now = Error::Unavailable("group sync: shut down with writes not flushed");
    }
  }
  done(std::move(now));
}

void GroupSync::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t GroupSync::flushes() const {
  std::lock_guard lock(mu_);
  return flush_count_;
}

void GroupSync::Run() {
  for (;;) {
    std::uint64_t target = 0;
    std::vector<fs::path> files;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !waiters_.empty(); });
      if (waiters_.empty()) return;  // stopping, nobody waits
      target = written_;
      files.swap(unflushed_);
    }
    // Everything reported up to `target` was written before this flush starts, so the flush
    // covers it; writes reported meanwhile wait for the next one.
    Status status = flush_(files);
    std::vector<Waiter> ready;
    {
      std::lock_guard lock(mu_);
      ++flush_count_;
      if (status.ok()) {
        flushed_ = std::max(flushed_, target);
      } else {
        // Try these files again in the next flush.
        unflushed_.insert(unflushed_.begin(), std::make_move_iterator(files.begin()),
                          std::make_move_iterator(files.end()));
      }
      auto covered = std::stable_partition(waiters_.begin(), waiters_.end(),
                                           [target](const Waiter& w) { return w.covers > target; });
      ready.assign(std::make_move_iterator(covered), std::make_move_iterator(waiters_.end()));
      waiters_.erase(covered, waiters_.end());
    }
    for (Waiter& waiter : ready) waiter.done(status);
  }
}

Status GroupSync::DefaultFlush(const std::vector<fs::path>& files) const {
  if (!per_file_) {
    if (::syncfs(dir_fd_) != 0) return ErrnoError(errno, "syncfs '" + options_.dir.string() + "'");
    return OkStatus();
  }
  std::set<fs::path> dirs;
  for (const fs::path& file : files) {
    // A file replaced again since it was reported is gone under its temp name only; its
    // final name is what counts, and that is what was reported.
    Status st = FsyncPath(file, O_RDONLY);
    if (!st.ok() && st.error().code != ErrorCode::kNotFound) return st;
    dirs.insert(file.parent_path());
  }
  for (const fs::path& dir : dirs) HALITE_RETURN_IF_ERROR(FsyncPath(dir, O_RDONLY | O_DIRECTORY));
  return OkStatus();
}

}  // namespace halite::keys
