// The master's symmetric keys.
//
// AesKeyRing: the key minions use for publishes (and v2 requests), plus the publish serial
// (salt-wire 4.8: strictly increasing per key, reset with the key). Thread-safe.
//
// SessionKeys: per-minion session keys for v3 requests (salt-wire 4.6), one file per minion
// under <cachedir>/sessions, cached in memory. Thread-safe; Get may block on disk, so call it
// from worker threads only.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "halite/common/result.h"
#include "halite/wire/crypticle.h"

namespace halite::master {

using CrypticlePtr = std::shared_ptr<const wire::Crypticle>;

class AesKeyRing {
 public:
  explicit AesKeyRing(wire::Crypticle initial);
  CrypticlePtr Current() const;
  std::uint64_t generation() const;
  // Replaces the key and resets the serial; returns the new generation.
  std::uint64_t Rotate(wire::Crypticle next);
  // Next publish serial for the current key (first is 1). Returns the key it belongs to.
  std::pair<CrypticlePtr, std::uint64_t> NextSerial();

 private:
  mutable std::mutex mu_;
  CrypticlePtr current_ HALITE_GUARDED_BY(mu_);
  std::uint64_t generation_ HALITE_GUARDED_BY(mu_) = 1;
  std::uint64_t serial_ HALITE_GUARDED_BY(mu_) = 0;
};

class SessionKeys {
 public:
  SessionKeys(std::filesystem::path dir, std::chrono::seconds lifetime);

  // The current session key of `id`, creating or renewing the file when it is missing or
  // older than the lifetime. `id` must already be a valid minion id.
  Result<CrypticlePtr> Get(std::string_view id);
  // Drops the cached key so that the next Get re-reads the file (another master may have
  // renewed it).
  void Forget(std::string_view id);

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

}  // namespace halite::master
