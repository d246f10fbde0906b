#include "halite/master/file_hashes.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include "halite/wire/encoding.h"

namespace halite::master {

namespace {

constexpr std::size_t kReadChunk = 1 << 20;

std::int64_t Nanos(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileHashes::Stamp FileHashes::StampOf(const struct stat& st) {
  return Stamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
               static_cast<std::uint64_t>(st.st_size), Nanos(st.st_mtim), Nanos(st.st_ctim)};
}

Result<FileHashes::Hash> FileHashes::Sha256(const std::filesystem::path& path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    return Error::NotFound("cannot open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat before {};
  if (::fstat(file.fd, &before) != 0) {
    return Error::Internal("cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  if (!S_ISREG(before.st_mode)) return Error::InvalidArgument(path.string() + " is not a file");
  const Stamp stamp = StampOf(before);
  const FileId key{stamp.dev, stamp.ino};
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.stamp == stamp) {
      ++from_memory_;
      return Hash{it->second.sha256_hex, true};
    }
  }

  struct timespec started {};
  ::clock_gettime(CLOCK_REALTIME, &started);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) {
    return Error::Internal("SHA-256 unavailable");
  }
  std::vector<char> buf(kReadChunk);
  for (;;) {
    const ssize_t n = ::read(file.fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::Internal("cannot read " + path.string() + ": " + std::strerror(errno));
    }
    EVP_DigestUpdate(md.get(), buf.data(), static_cast<std::size_t>(n));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(md.get(), digest, &len) != 1) return Error::Internal("SHA-256 failed");
  Hash out{wire::HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len)), false};
  ++read_;

  if (max_entries_ == 0) return out;
  struct stat after {};
  const bool racy =
      std::max(stamp.mtime_ns, stamp.ctime_ns) > Nanos(started) - racy_window_.count();
  if (racy || ::fstat(file.fd, &after) != 0 || !(StampOf(after) == stamp)) return out;
  std::lock_guard lock(mu_);
  if (entries_.size() >= max_entries_ && entries_.find(key) == entries_.end()) entries_.clear();
  entries_[key] = Entry{stamp, out.sha256_hex};
  return out;
}

std::size_t FileHashes::remembered() {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace halite::master
