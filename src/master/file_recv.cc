// cp.push chunks under the minion's files directory (include/halite/master/file_recv.h).
#include "halite/master/file_recv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "halite/keys/key_store.h"

namespace halite::master {
namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// The path's components, normalised as os.path.normpath would, or an error when the result is
// absolute, climbs out, or holds a name no file can have.
Result<std::vector<std::string>> Components(const wire::Array& path) {
  std::string joined;
  for (const auto& part : path) {
    const std::string* s = part.str();
    if (!s) return Error::InvalidArgument("a path component is not a string");
    if (s->find('\0') != std::string::npos) return Error::InvalidArgument("NUL in the path");
    if (!joined.empty()) joined += '/';
    joined += *s;
  }
  if (joined.empty()) return Error::InvalidArgument("empty path");
  const std::filesystem::path normal = std::filesystem::path(joined).lexically_normal();
  if (normal.is_absolute()) return Error::PermissionDenied("absolute path " + joined);
  std::vector<std::string> out;
  for (const auto& c : normal) {
    const std::string name = c.string();
    if (name.empty() || name == ".") continue;
    if (name == "..") return Error::PermissionDenied("path leaves the cache: " + joined);
    if (name.size() > 255) return Error::InvalidArgument("a path component is over 255 bytes");
    out.push_back(name);
  }
  if (out.empty()) return Error::InvalidArgument("empty path");
  if (out.size() > 64) return Error::InvalidArgument("path deeper than 64 directories");
  return out;
}

// Opens (creating it when missing) directory `name` under `parent`, never through a symlink.
Result<Fd> OpenDir(int parent, const std::string& name) {
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.ok()) return fd;
  if (errno != ENOENT) return Error::PermissionDenied(Errno("open " + name));
  if (::mkdirat(parent, name.c_str(), 0750) != 0 && errno != EEXIST) {
    return Error::Unavailable(Errno("mkdir " + name));
  }
  fd = Fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) return Error::PermissionDenied(Errno("open " + name));
  return fd;
}

std::optional<long long> IntOf(const wire::Value* v) {
  if (!v) return std::nullopt;
  if (auto i = v->int64()) return *i;
  return std::nullopt;
}

}  // namespace

Status ReceiveFileChunk(const config::MasterConfig& config, const std::string& id,
                        const wire::Value& load) {
  if (!config.file_recv) return Error::PermissionDenied("file_recv is off on this master");
  if (!keys::ValidMinionId(id)) return Error::InvalidArgument("invalid minion id");
  const wire::Value* path = load.Find("path");
  const wire::Value* data = load.Find("data");
  const auto loc = IntOf(load.Find("loc"));
  if (!path || !path->array() || !data || !data->str() || !loc) {
    return Error::InvalidArgument("_file_recv needs path (a list), loc and data");
  }
  if (*loc < 0) return Error::InvalidArgument("Invalid file pointer: load[loc] < 0");
  const std::string& bytes = *data->str();
  const long long max = static_cast<long long>(config.file_recv_max_size) * 1024 * 1024;
  if (static_cast<long long>(bytes.size()) + *loc > max) {
    return Error::ResourceExhausted("file_recv_max_size limit of " +
                                    std::to_string(config.file_recv_max_size) + " MB exceeded");
  }
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> parts, Components(*path->array()));

  // <cachedir>/minions/<id>/files, then each directory of the path, all without following
  // links: the cache directory itself is the operator's, the rest is the minion's to name.
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::path(config.cachedir) / "minions";
  std::filesystem::create_directories(root, ec);
  Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.ok()) return Error::Unavailable(Errno("open " + root.string()));
  for (const std::string& name : {id, std::string("files")}) {
    HALITE_ASSIGN_OR_RETURN(dir, OpenDir(dir.get(), name));
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    HALITE_ASSIGN_OR_RETURN(dir, OpenDir(dir.get(), parts[i]));
  }
  const std::string& leaf = parts.back();
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  if (*loc == 0) flags |= O_TRUNC;
  Fd file(::openat(dir.get(), leaf.c_str(), flags, 0640));
  if (!file.ok()) return Error::PermissionDenied(Errno("open " + leaf));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) return Error::Unavailable(Errno("stat " + leaf));
  if (!S_ISREG(st.st_mode)) return Error::PermissionDenied(leaf + " is not a regular file");
  if (*loc > st.st_size) {
    return Error::InvalidArgument("chunk at " + std::to_string(*loc) + " past the end (" +
                                  std::to_string(st.st_size) + " bytes received)");
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(file.get(), bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(*loc + static_cast<long long>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::Unavailable(Errno("write " + leaf));
    }
    done += static_cast<std::size_t>(n);
  }
  const long long end = *loc + static_cast<long long>(bytes.size());
  if (::ftruncate(file.get(), end) != 0) return Error::Unavailable(Errno("truncate " + leaf));
  // The last chunk: durable before the minion hears True (and may remove its source).
  const auto size = IntOf(load.Find("size"));
  if (!size || end >= *size) {
    if (::fdatasync(file.get()) != 0) return Error::Unavailable(Errno("sync " + leaf));
    if (::fsync(dir.get()) != 0) return Error::Unavailable(Errno("sync the directory of " + leaf));
  }
  return OkStatus();
}

}  // namespace halite::master
