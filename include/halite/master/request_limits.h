// Per-minion limits on what authenticated minions may send: replays and event floods.
//
// ReplayGuard: replay protection for encrypted requests (docs/security.md, "Replays"): remembers
// the nonces of recent requests per minion, so a request captured on the wire cannot be played
// again while its timestamp is still inside request_server_ttl (older ones fail the age check
// first).
//
// Bounded: at most `per_minion` nonces per id, each kept until it leaves the window. When a
// minion's list is full, its oldest entry is dropped and that entry's time becomes the minion's
// floor: a request stamped before the floor is refused too, so forgetting a nonce never
// reopens it. Memory: ids x per_minion x ~24 bytes; ids are only those whose tok verified.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "halite/common/check.h"

namespace halite::master {

class ReplayGuard {
 public:
  ReplayGuard(std::size_t per_minion, std::chrono::seconds window)
      : per_minion_(per_minion), window_(window.count()) {}

  // `ts`: the request's own timestamp in seconds (v3), or `now` when it carries none (v2).
  // True when the request is new (and is now remembered); false for a replay.
  bool Admit(std::string_view id, std::string_view nonce, std::int64_t ts, std::int64_t now);
  // Drops everything remembered for `id` (its key was deleted or replaced).
  void Forget(std::string_view id);
  std::size_t remembered() const;

 private:
  struct Seen {
    std::uint64_t nonce_hash;
    std::int64_t ts;
  };
  struct Minion {
    std::deque<Seen> seen;  // arrival order
    std::int64_t floor = 0;
  };

  const std::size_t per_minion_;
  const std::int64_t window_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Minion> minions_ HALITE_GUARDED_BY(mu_);
  std::size_t total_ HALITE_GUARDED_BY(mu_) = 0;
};

// Per-minion token buckets for minion events: `burst` events at once, refilled at `rate` per
// second. Ids with a full bucket are forgotten, so memory follows the minions that are
// currently sending. Thread-safe.
class EventRateLimiter {
 public:
  EventRateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}
  // Takes up to `wanted` tokens for `id` at `now`; returns how many were granted.
  std::size_t Take(std::string_view id, std::size_t wanted,
                   std::chrono::steady_clock::time_point now);

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  const double rate_;
  const double burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ HALITE_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_sweep_ HALITE_GUARDED_BY(mu_);
};

}  // namespace halite::master
