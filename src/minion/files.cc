#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "halite/wire/encoding.h"

namespace halite::minion::internal {
namespace {

Error FromErrno(int err, const std::string& what) {
  std::string message = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Error::NotFound(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return Error::PermissionDenied(std::move(message));
    default:
      return Error::Unavailable(std::move(message));
  }
}

}  // namespace

Result<std::string> ReadWholeFile(const std::filesystem::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FromErrno(errno, path.string());
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return FromErrno(err, path.string());
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  std::filesystem::path tmp = path.parent_path() / ("." + path.filename().string() + ".tmp-" +
                                                    wire::HexEncode(wire::RandomBytes(6)));
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return FromErrno(errno, tmp.string());
  auto fail = [&](int err) -> Status {
    close(fd);
    unlink(tmp.c_str());
    return FromErrno(err, tmp.string());
  };
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (fchmod(fd, mode) != 0) return fail(errno);
  if (fsync(fd) != 0) return fail(errno);
  if (close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return FromErrno(err, tmp.string());
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return FromErrno(err, path.string());
  }
  return OkStatus();
}

Status EnsureDirectory(const std::filesystem::path& path, mode_t mode) {
  if (path.empty()) return Error::InvalidArgument("empty directory path");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Error::FailedPrecondition(path.string() + " exists and is not a directory");
    }
    return OkStatus();
  }
  if (path.has_parent_path() && path.parent_path() != path) {
    HALITE_RETURN_IF_ERROR(EnsureDirectory(path.parent_path(), mode));
  }
  if (mkdir(path.c_str(), mode) != 0) {
    if (errno == EEXIST) return OkStatus();  // made by someone else meanwhile
    return FromErrno(errno, path.string());
  }
  // mkdir applied the umask; the mode asked for is the one wanted.
  if (chmod(path.c_str(), mode) != 0) return FromErrno(errno, path.string());
  return OkStatus();
}

}  // namespace halite::minion::internal
