// The master's symmetric keys.
//
// AesKeyRing: the key minions use for publishes (and v2 requests), plus the publish serial
// (salt-wire 4.8: strictly increasing per key, reset with the key). Thread-safe.
// (Per-minion session keys: session_keys.h.)
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

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

}  // namespace halite::master
