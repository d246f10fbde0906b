// FileHashes: SHA-256 of files the master serves (file_roots), read in bounded chunks and
// remembered while the file is unchanged. A minion's `_file_hash` of a multi-gigabyte file in
// the roots costs one streamed read the first time and a lookup after that (Salt keeps such
// hashes in <cachedir>/roots/hash, checked by mtime); before, every request read the whole
// file into one string (docs/security.md, finding 15).
//
// "Unchanged" is the same device, inode, size, mtime and ctime (nanoseconds), checked with
// fstat on the descriptor that is read. A file whose mtime or ctime is within the racy window
// (kRacySeconds) of the read is hashed but not remembered: file systems stamp times at a clock
// tick, so a second write of the same size in the same tick would look unchanged (git's "racily
// clean" rule). A file that changes while it is read is answered with what was read and not
// remembered.
//
// Hashes are remembered by file (device and inode), not by the path asked for: `big.iso`,
// `./big.iso` and `.//big.iso` are one entry, so aliases neither read the file again nor fill
// the memory with long keys (finding 25). At most `max_entries` hashes are kept; when full,
// the memory is dropped and refilled (every entry is a file in the roots, so only a tree of
// that many files, or churn, fills it).
// Thread-safe; blocks on disk (worker threads only).
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "halite/common/result.h"

namespace halite::master {

class FileHashes {
 public:
  static constexpr int kRacySeconds = 2;
  static constexpr std::size_t kDefaultMaxEntries = 262144;

  explicit FileHashes(std::size_t max_entries = kDefaultMaxEntries,
                      std::chrono::nanoseconds racy_window = std::chrono::seconds(kRacySeconds))
      : max_entries_(max_entries), racy_window_(racy_window) {}

  struct Hash {
    std::string sha256_hex;
    bool from_memory = false;
  };
  // NotFound when `path` cannot be opened, InvalidArgument when it is not a regular file,
  // Internal on a read error.
  Result<Hash> Sha256(const std::filesystem::path& path);

  // Hashes read from disk and answered from memory, since the start (for /metrics).
  std::uint64_t read() const { return read_.load(); }
  std::uint64_t from_memory() const { return from_memory_.load(); }
  std::size_t remembered();

 private:
  // What "unchanged" compares (fstat of the descriptor read).
  struct Stamp {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };
  struct Entry {
    Stamp stamp;
    std::string sha256_hex;
  };
  struct FileId {
    std::uint64_t dev = 0, ino = 0;
    friend bool operator==(const FileId&, const FileId&) = default;
  };
  struct FileIdHash {
    std::size_t operator()(const FileId& f) const noexcept {
      return std::hash<std::uint64_t>()(f.ino * 0x9e3779b97f4a7c15ULL ^ f.dev);
    }
  };
  static Stamp StampOf(const struct stat& st);

  const std::size_t max_entries_;
  const std::chrono::nanoseconds racy_window_;
  std::mutex mu_;
  std::unordered_map<FileId, Entry, FileIdHash> entries_;  // guarded by mu_
  std::atomic<std::uint64_t> read_{0};
  std::atomic<std::uint64_t> from_memory_{0};
};

}  // namespace halite::master
