// Per-minion limits on what authenticated minions may send: replays, event floods, and their
// share of the worker pool.
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

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
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

// Per-minion shares of the worker pool. At most `running` requests of one minion are handled
// at once; its others wait in that minion's own queue (at most `waiting` each, and
// `waiting_bytes` of request bodies for all minions together) and are handed to the pool,
// behind whatever already waits there, as its earlier ones finish. A request that finds its
// minion's queue full is dropped unanswered (its minion times out and resends) and counted.
// So one minion, however many requests it pipelines, holds at most `running` workers, and the
// others' requests do not queue behind its own. Ids are those a tok proved. Thread-safe.
class MinionSlots {
 public:
  using Post = std::function<void(std::function<void()>)>;
  MinionSlots(std::size_t running, std::size_t waiting, std::size_t waiting_bytes, Post post)
      : running_(running),
        waiting_(waiting),
        waiting_bytes_(waiting_bytes),
        post_(std::move(post)) {
    HALITE_CHECK(running_ > 0);
  }

  // Runs `work` on this thread now, or queues it for `id` (`bytes`: its request's size). False
  // when it was dropped: `work` was not run and will not be.
  bool Run(const std::string& id, std::size_t bytes, std::function<void()> work);

  std::uint64_t dropped() const { return dropped_.load(); }
  std::size_t waiting() const;  // requests waiting now, all minions

 private:
  struct Waiting {
    std::size_t bytes;
    std::function<void()> work;
  };
  struct Minion {
    std::size_t running = 0;
    std::deque<Waiting> waiting;
  };
  // Runs `work` in a slot of `id` that the caller holds, then hands the slot to the minion's
  // next waiting request (posted) or gives it back, even if `work` throws.
  void RunInSlot(const std::string& id, std::function<void()> work);

  const std::size_t running_;
  const std::size_t waiting_;
  const std::size_t waiting_bytes_;
  const Post post_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Minion> minions_ HALITE_GUARDED_BY(mu_);
  std::size_t waiting_count_ HALITE_GUARDED_BY(mu_) = 0;
  std::size_t waiting_total_bytes_ HALITE_GUARDED_BY(mu_) = 0;
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace halite::master
