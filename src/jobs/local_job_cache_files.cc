// The local job cache's files: helpers, atomic file creation and jid directories.
#include "local_job_cache_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE

#include <algorithm>
#include <climits>
#include <system_error>

namespace halite::jobs {

namespace local_fs {

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

int MakeDir(const std::string& path) { return ::mkdir(path.c_str(), kDirMode) == 0 ? 0 : errno; }

int MakeDirs(const std::filesystem::path& path) {
  const int err = MakeDir(path.string());
  if (err == 0) return 0;
  if (err == EEXIST) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  }
  if (err != ENOENT || !path.has_parent_path() || path.parent_path() == path) return err;
  if (const int parent_err = MakeDirs(path.parent_path()); parent_err != 0) return parent_err;
  const int again = MakeDir(path.string());
  return again == EEXIST ? 0 : again;
}

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

}  // namespace local_fs

using namespace local_fs;

Result<std::optional<bool>> LocalJobCache::LinkNewFile(const std::string& dir,
                                                       const std::string& final_path,
                                                       std::string_view data, SyncSet& sync) {
  Fd fd(::open(dir.c_str(), O_WRONLY | O_TMPFILE | O_CLOEXEC, kFileMode));
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
    fd.Reset(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode));
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

}  // namespace halite::jobs
