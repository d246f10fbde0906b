#include "halite/master/session_keys.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "halite/keys/fs.h"
#include "halite/wire/crypticle.h"

namespace halite::master {

CrypticlePtr NewSessionKey() {
  auto fresh = wire::Crypticle::FromKeyString(wire::Crypticle::GenerateKeyString());
  HALITE_CHECK(fresh.ok());
  return std::make_shared<const wire::Crypticle>(std::move(*fresh));
}

namespace {

// --- memory ---------------------------------------------------------------------------------

// A session file another master left (salt-master before a migration, docs/migrate.md): its
// key and mtime when it is still within `lifetime`, else nullopt. Never written.
struct Adopted {
  CrypticlePtr key;
  std::chrono::system_clock::time_point made;
};
std::optional<Adopted> AdoptFile(const std::filesystem::path& path, std::chrono::seconds lifetime,
                                 std::chrono::system_clock::time_point now) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto mtime = std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
  if (now - mtime >= lifetime) return std::nullopt;
  auto text = keys::ReadFile(path);
  if (!text.ok()) return std::nullopt;
  auto key = wire::Crypticle::FromKeyString(*text);
  if (!key.ok()) return std::nullopt;
  return Adopted{std::make_shared<const wire::Crypticle>(std::move(*key)), mtime};
}

class MemorySessionKeys final : public SessionKeys {
 public:
  MemorySessionKeys(std::chrono::seconds lifetime, std::size_t capacity,
                    std::filesystem::path adopt_dir)
      : lifetime_(lifetime), capacity_(capacity), adopt_dir_(std::move(adopt_dir)) {
    HALITE_CHECK(capacity_ > 0) << "MemorySessionKeys needs room for one key";
  }

  // SessionKeys:
  Result<CrypticlePtr> Get(std::string_view id, const keys::FileStamp& key_stamp) override {
    const auto now = std::chrono::system_clock::now();
    std::lock_guard lock(mu_);
    auto it = keys_.find(std::string(id));
    if (it != keys_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      if (it->second.key_stamp == key_stamp && now - it->second.made < lifetime_) {
        return it->second.key;
      }
      it->second = Entry{NewSessionKey(), key_stamp, now, it->second.lru};
      return it->second.key;
    }
    while (keys_.size() >= capacity_) {
      keys_.erase(lru_.back());
      lru_.pop_back();
    }
    Entry entry{NewSessionKey(), key_stamp, now, {}};
    if (!adopt_dir_.empty()) {
      // One stat per minion this master has not seen since it started.
      if (auto adopted = AdoptFile(adopt_dir_ / std::string(id), lifetime_, now)) {
        entry.key = adopted->key;
        entry.made = adopted->made;
      }
    }
    lru_.emplace_front(id);
    entry.lru = lru_.begin();
    auto [pos, inserted] = keys_.emplace(std::string(id), std::move(entry));
    return pos->second.key;
  }
  void Forget(std::string_view /*id*/) override {}
  std::size_t SizeForTest() override {
    std::lock_guard lock(mu_);
    return keys_.size();
  }

 private:
  struct Entry {
    CrypticlePtr key;
    keys::FileStamp key_stamp;
    std::chrono::system_clock::time_point made;
    std::list<std::string>::iterator lru;
  };

  const std::chrono::seconds lifetime_;
  const std::size_t capacity_;
  const std::filesystem::path adopt_dir_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> keys_ HALITE_GUARDED_BY(mu_);
  std::list<std::string> lru_ HALITE_GUARDED_BY(mu_);  // most recent first
};

// --- files ----------------------------------------------------------------------------------

// Session keys need no fsync: a key lost in a crash only makes its minion re-authenticate,
// and an fsync per sign-in would cap the auth rate at the disk's flush rate.
std::atomic<std::uint64_t> temp_counter{0};

Result<std::filesystem::path> WriteTemp(const std::filesystem::path& path,
                                        std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temp_counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) {
    // The directory is made on first use (or again, if someone removed it).
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(path.parent_path(), 0700, keys::Sync::kNone));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) return Error::Unavailable("open " + tmp.string() + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, content.data(), content.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(content.size())) {
    ::unlink(tmp.c_str());
    return Error::Unavailable("write " + tmp.string() + ": " + std::strerror(err));
  }
  return tmp;
}

Status ReplaceFile(const std::filesystem::path& path, std::string_view content) {
  HALITE_ASSIGN_OR_RETURN(auto tmp, WriteTemp(path, content));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::Unavailable("rename " + path.string() + ": " + std::strerror(err));
  }
  return OkStatus();
}

// true when this call created `path`; false when it already existed.
Result<bool> CreateFile(const std::filesystem::path& path, std::string_view content) {
  HALITE_ASSIGN_OR_RETURN(auto tmp, WriteTemp(path, content));
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) return true;
  if (err == EEXIST) return false;
  return Error::Unavailable("link " + path.string() + ": " + std::strerror(err));
}

// The file's modification time (what Get compares the cached entry with), or `fallback`.
std::chrono::system_clock::time_point MtimeOr(const std::filesystem::path& path,
                                              std::chrono::system_clock::time_point fallback) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fallback;
  return std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec) +
                                               std::chrono::nanoseconds(st.st_mtim.tv_nsec));
}

class FileSessionKeys final : public SessionKeys {
 public:
  FileSessionKeys(std::filesystem::path dir, std::chrono::seconds lifetime)
      : dir_(std::move(dir)), lifetime_(lifetime) {}

  // SessionKeys:
  Result<CrypticlePtr> Get(std::string_view id, const keys::FileStamp& /*key_stamp*/) override {
    auto now = std::chrono::system_clock::now();
    {
      std::lock_guard lock(mu_);
      auto it = cache_.find(std::string(id));
      if (it != cache_.end() && now - it->second.mtime < lifetime_) {
        // One stat per request: a session file that halite-key removed (key deleted) or
        // another master replaced ends the cached key at once, not when its lifetime runs out.
        if (MtimeOr(dir_ / std::string(id), {}) == it->second.mtime) return it->second.key;
        cache_.erase(it);
      }
    }
    HALITE_ASSIGN_OR_RETURN(Entry entry, LoadOrCreate(id));
    std::lock_guard lock(mu_);
    cache_[std::string(id)] = entry;
    return entry.key;
  }
  void Forget(std::string_view id) override {
    std::lock_guard lock(mu_);
    cache_.erase(std::string(id));
  }
  std::size_t SizeForTest() override {
    std::lock_guard lock(mu_);
    return cache_.size();
  }

 private:
  struct Entry {
    CrypticlePtr key;
    std::chrono::system_clock::time_point mtime;
  };
  Result<Entry> LoadOrCreate(std::string_view id);

  const std::filesystem::path dir_;
  const std::chrono::seconds lifetime_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_ HALITE_GUARDED_BY(mu_);
};

Result<FileSessionKeys::Entry> FileSessionKeys::LoadOrCreate(std::string_view id) {
  const std::filesystem::path path = dir_ / std::string(id);
  auto now = std::chrono::system_clock::now();
  for (int attempt = 0; attempt < 3; ++attempt) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      auto mtime = std::chrono::system_clock::time_point(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
      if (now - mtime < lifetime_) {
        auto text = keys::ReadFile(path);
        if (text.ok()) {
          auto key = wire::Crypticle::FromKeyString(*text);
          if (key.ok()) {
            return Entry{std::make_shared<const wire::Crypticle>(std::move(*key)), mtime};
          }
          spdlog::warn("session key file {} is corrupt ({}); writing a new one", path.string(),
                       key.error().message);
        }
      }
      // Expired or corrupt: replace it. Two masters renewing at once is harmless: the last
      // rename wins and the loser's minions re-authenticate on their next request.
      CrypticlePtr fresh = NewSessionKey();
      HALITE_RETURN_IF_ERROR(ReplaceFile(path, fresh->key_string()));
      return Entry{fresh, MtimeOr(path, now)};
    }
    // Missing: exactly one creator wins on a shared directory; others read its key.
    CrypticlePtr fresh = NewSessionKey();
    HALITE_ASSIGN_OR_RETURN(bool created, CreateFile(path, fresh->key_string()));
    if (created) return Entry{fresh, MtimeOr(path, now)};
  }
  return Error::Unavailable("could not settle the session key file " + path.string());
}

}  // namespace

std::unique_ptr<SessionKeys> MakeFileSessionKeys(std::filesystem::path dir,
                                                 std::chrono::seconds lifetime) {
  return std::make_unique<FileSessionKeys>(std::move(dir), lifetime);
}

std::unique_ptr<SessionKeys> MakeMemorySessionKeys(std::chrono::seconds lifetime,
                                                   std::size_t capacity,
                                                   std::filesystem::path adopt_dir) {
  return std::make_unique<MemorySessionKeys>(lifetime, capacity, std::move(adopt_dir));
}

}  // namespace halite::master
