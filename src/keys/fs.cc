#include "halite/keys/fs.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "halite/wire/encoding.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

// Closes the descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  // Returns close()'s errno, or 0.
  int Close() {
    if (fd_ < 0) return 0;
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

fs::path DirOf(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

std::string Quote(const fs::path& path) { return "'" + path.string() + "'"; }

Status WriteAll(int fd, std::string_view content, const fs::path& path) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write " + Quote(path));
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return OkStatus();
}

Status SyncDir(const fs::path& dir) {
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return ErrnoError(errno, "open directory " + Quote(dir));
  Fd fd(raw);
  // Some filesystems cannot sync a directory (EINVAL); the rename itself has still happened.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) {
    return ErrnoError(errno, "fsync directory " + Quote(dir));
  }
  return OkStatus();
}

// Writes a complete, synced temp file next to `path` and returns its name. The caller moves it
// into place or unlinks it.
Result<fs::path> WriteTempFile(const fs::path& path, std::string_view content, mode_t mode,
                               Sync sync = Sync::kDurable) {
  const fs::path dir = DirOf(path);
  // Bounded so that the temp name fits NAME_MAX (255) even for a 255-byte file name.
  const std::string base = "." + path.filename().string().substr(0, 128) + ".tmp-";
  for (int attempt = 0; attempt < 8; ++attempt) {
    fs::path temp = dir / (base + wire::HexEncode(wire::RandomBytes(8)));
    int raw = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (raw < 0) {
      if (errno == EEXIST) continue;
      return ErrnoError(errno, "create " + Quote(temp));
    }
    Fd fd(raw);
    Status status = WriteAll(fd.get(), content, temp);
    if (status.ok() && ::fchmod(fd.get(), mode) != 0) {
      status = ErrnoError(errno, "chmod " + Quote(temp));
    }
    if (status.ok() && sync == Sync::kDurable && ::fsync(fd.get()) != 0) {
      status = ErrnoError(errno, "fsync " + Quote(temp));
    }
    if (int err = fd.Close(); status.ok() && err != 0) {
      status = ErrnoError(err, "close " + Quote(temp));
    }
    if (!status.ok()) {
      ::unlink(temp.c_str());
      return std::move(status).error();
    }
    return temp;
  }
  return Error::Internal("no unique temp name next to " + Quote(path));
}

}  // namespace

Error ErrnoError(int err, std::string_view what) {
  std::string message = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Error::NotFound(std::move(message));
    case EEXIST:
      return Error::AlreadyExists(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return Error::PermissionDenied(std::move(message));
    case ENOSPC:
    case EDQUOT:
      return Error::ResourceExhausted(std::move(message));
    default:
      return Error::Unavailable(std::move(message));
  }
}

Status WriteFileAtomic(const fs::path& path, std::string_view content, mode_t mode, Sync sync) {
  HALITE_ASSIGN_OR_RETURN(fs::path temp, WriteTempFile(path, content, mode, sync));
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Error error = ErrnoError(errno, "rename to " + Quote(path));
    ::unlink(temp.c_str());
    return error;
  }
  if (sync == Sync::kNone) return OkStatus();
  return SyncDir(DirOf(path));
}

Result<bool> CreateFileExclusive(const fs::path& path, std::string_view content, mode_t mode) {
  HALITE_ASSIGN_OR_RETURN(fs::path temp, WriteTempFile(path, content, mode));
  bool created = false;
  int err = 0;
  if (::link(temp.c_str(), path.c_str()) == 0) {
    created = true;
  } else if (errno == EEXIST) {
    created = false;
  } else if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
    // Filesystems without hard links; renameat2 consumes the temp file when it succeeds.
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) {
      HALITE_RETURN_IF_ERROR(SyncDir(DirOf(path)));
      return true;
    }
    if (errno != EEXIST) err = errno;
  } else {
    err = errno;
  }
  ::unlink(temp.c_str());
  if (err != 0) return ErrnoError(err, "create " + Quote(path));
  HALITE_RETURN_IF_ERROR(SyncDir(DirOf(path)));
  return created;
}

Result<std::string> ReadFile(const fs::path& path) {
  // O_NONBLOCK: opening a FIFO must not hang; it has no effect on regular files.
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return ErrnoError(errno, "open " + Quote(path));
  Fd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat " + Quote(path));
  if (!S_ISREG(st.st_mode)) return Error::NotFound(Quote(path) + " is not a regular file");
  std::string content;
  content.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read " + Quote(path));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  return content;
}

Status RemoveFile(const fs::path& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoError(errno, "remove " + Quote(path));
  return SyncDir(DirOf(path));
}

Status EnsureDir(const fs::path& path, mode_t mode, Sync sync) {
  if (path.empty()) return Error::InvalidArgument("empty directory path");
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::mkdir(path.c_str(), mode) == 0) {
      // mkdir applies the umask; the caller asked for exactly `mode`.
      if (::chmod(path.c_str(), mode) != 0) return ErrnoError(errno, "chmod " + Quote(path));
      if (sync == Sync::kNone) return OkStatus();
      return SyncDir(DirOf(path));
    }
    const int err = errno;
    if (err == EEXIST) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + Quote(path));
      if (!S_ISDIR(st.st_mode)) {
        return Error::FailedPrecondition(Quote(path) + " exists and is not a directory");
      }
      return OkStatus();
    }
    if (err != ENOENT || attempt > 0) return ErrnoError(err, "mkdir " + Quote(path));
    const fs::path parent = path.parent_path();
    if (parent.empty() || parent == path) return ErrnoError(err, "mkdir " + Quote(path));
    HALITE_RETURN_IF_ERROR(EnsureDir(parent, mode, sync));
  }
  return Error::Internal("unreachable: mkdir " + Quote(path));
}

}  // namespace halite::keys
