#include "halite/keys/fs_key_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <utility>

#include "halite/keys/fs.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAutosignDir = "minions_autosign";
constexpr KeyState kAllStates[] = {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected,
                                   KeyState::kDenied};

std::string Quote(const fs::path& path) { return "'" + path.string() + "'"; }

std::int64_t MtimeNs(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::int64_t NowNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);  // file mtimes are wall-clock times
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Closes a DIR* on every path out of a function.
class Dir {
 public:
  explicit Dir(DIR* dir) : dir_(dir) {}
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  ~Dir() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  DIR* get() const { return dir_; }

 private:
  DIR* dir_;
};

// Names of the regular files (symlinks followed) in `dir`, hidden names included.
Result<std::vector<std::string>> RegularFiles(const fs::path& dir) {
  Dir handle(::opendir(dir.c_str()));
  if (handle.get() == nullptr) return ErrnoError(errno, "opendir " + Quote(dir));
  const int dir_fd = ::dirfd(handle.get());
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const struct dirent* entry = ::readdir(handle.get());
    if (entry == nullptr) {
      if (errno != 0) return ErrnoError(errno, "readdir " + Quote(dir));
      break;
    }
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, 0) != 0) continue;  // vanished or dangling
    if (S_ISREG(st.st_mode)) names.emplace_back(name);
  }
  return names;
}

}  // namespace

Result<std::unique_ptr<FsKeyStore>> FsKeyStore::Open(fs::path root) {
  return Open(std::move(root), nullptr);
}

Result<std::unique_ptr<FsKeyStore>> FsKeyStore::Open(fs::path root, GroupSync* group_sync) {
  HALITE_RETURN_IF_ERROR(EnsureDir(root, kDirMode));
  for (KeyState state : kAllStates) {
    HALITE_RETURN_IF_ERROR(EnsureDir(root / KeyStateDir(state), kDirMode));
  }
  HALITE_RETURN_IF_ERROR(EnsureDir(root / kAutosignDir, kDirMode));
  return std::unique_ptr<FsKeyStore>(new FsKeyStore(std::move(root), group_sync));
}

Result<fs::path> FsKeyStore::KeyPath(KeyState state, std::string_view id) const {
  if (!ValidMinionId(id))
    return Error::InvalidArgument("invalid minion id '" + std::string(id) + "'");
  return root_ / KeyStateDir(state) / id;
}

Result<std::string> FsKeyStore::Read(KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(fs::path path, KeyPath(state, id));
  return ReadFile(path);
}

Status FsKeyStore::Write(KeyState state, std::string_view id, std::string_view pem) {
  HALITE_ASSIGN_OR_RETURN(fs::path path, KeyPath(state, id));
  if (group_sync_ == nullptr) return WriteFileAtomic(path, pem, kKeyFileMode);
  HALITE_RETURN_IF_ERROR(WriteFileAtomic(path, pem, kKeyFileMode, Sync::kNone));
  group_sync_->Wrote(std::move(path));
  return OkStatus();
}

void FsKeyStore::AfterDurable(std::function<void(Status)> done) {
  if (group_sync_ == nullptr) {
    done(OkStatus());
    return;
  }
  group_sync_->AfterDurable(std::move(done));
}

Status FsKeyStore::Remove(KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(fs::path path, KeyPath(state, id));
  return RemoveFile(path);
}

Result<std::vector<std::string>> FsKeyStore::List(KeyState state) {
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> names, RegularFiles(root_ / KeyStateDir(state)));
  std::erase_if(names, [](const std::string& name) { return name.starts_with('.'); });
  std::sort(names.begin(), names.end());
  return names;
}

Result<bool> FsKeyStore::ConsumeAutosignStub(std::string_view id, std::chrono::minutes timeout) {
  if (!ValidMinionId(id))
    return Error::InvalidArgument("invalid minion id '" + std::string(id) + "'");
  const fs::path dir = root_ / kAutosignDir;
  if (timeout.count() > 0) {
    const std::int64_t min_time =
        NowNs() - std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
    HALITE_ASSIGN_OR_RETURN(std::vector<std::string> stubs, RegularFiles(dir));
    for (const std::string& name : stubs) {
      const fs::path stub = dir / name;
      struct stat st {};
      if (::stat(stub.c_str(), &st) != 0) continue;  // consumed by someone else meanwhile
      if (MtimeNs(st) < min_time && ::unlink(stub.c_str()) != 0 && errno != ENOENT) {
        return ErrnoError(errno, "remove expired autosign stub " + Quote(stub));
      }
    }
  }
  Status removed = RemoveFile(dir / id);
  if (removed.ok()) return true;
  if (removed.error().code == ErrorCode::kNotFound) return false;
  return std::move(removed).error();
}

Status FsKeyStore::Available() {
  std::error_code ec;
  const auto dir = root_ / KeyStateDir(KeyState::kAccepted);
  if (std::filesystem::is_directory(dir, ec)) return OkStatus();
  return Error::Unavailable("the key directory " + dir.string() + " cannot be read" +
                            (ec ? ": " + ec.message() : " (gone)"));
}

Result<bool> FsKeyStore::IsDirectory(KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(fs::path path, KeyPath(state, id));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return ErrnoError(errno, "stat " + Quote(path));
  }
  return S_ISDIR(st.st_mode);
}

Result<FileStamp> FsKeyStore::Stamp(KeyState state, std::string_view id) {
  HALITE_ASSIGN_OR_RETURN(fs::path path, KeyPath(state, id));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + Quote(path));
  if (!S_ISREG(st.st_mode)) return Error::NotFound(Quote(path) + " is not a regular file");
  return FileStamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                   static_cast<std::uint64_t>(st.st_size), MtimeNs(st)};
}

}  // namespace halite::keys
