// What a master re-publishes when minions (re)connect to its publisher: the jobs it sent or
// forwarded that are still within their timeout. A minion whose master died, or whose HAProxy
// session moved, reconnects to another master after the publish went out; PUB/SUB has no
// history, so without a replay that minion never runs the job (issue 16, docs/failure-modes.md).
// Replays go to every subscriber: minions that already have the jid drop it (Salt's jid_queue,
// minion_jid_queue_hwm), so a job still runs once per minion.
//
// Pure bookkeeping with the time passed in (tests drive it with a fake clock); the Publisher
// owns one and uses it on its loop thread only. Not thread-safe.
//
// Bounds: at most `max_jobs` loads and `max_bytes` of packed load (the oldest go first), each
// kept for its own window ("to" from the publish, else `default_window`, at most
// `max_window`); a replay runs `debounce` after the first new subscriber and covers every one
// that arrives meanwhile, so there is at most one replay per `debounce` and a reconnect burst
// of thousands costs a handful.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "halite/wire/msgpack.h"

namespace halite::master {

struct PublishReplayOptions {
  std::chrono::milliseconds default_window{5000};  // the master's `timeout`
  std::chrono::milliseconds max_window{120000};
  std::chrono::milliseconds debounce{200};
  std::size_t max_jobs = 256;
  std::size_t max_bytes = 16u << 20;
};

class PublishReplay {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PublishReplay(PublishReplayOptions options) : options_(options) {}

  // Keeps a publish load (it needs a "jid"; others are ignored) published at `now`. The same
  // jid again replaces the older entry.
  void Remember(const wire::Value& load, Clock::time_point now);
  // A subscriber arrived at `now`. Returns when the caller should call TakeReplay, or nullopt
  // when a replay is already scheduled (it will cover this subscriber) or nothing is live.
  std::optional<Clock::time_point> OnSubscriber(Clock::time_point now);
  // The scheduled replay is due: the loads still live at `now`, oldest first.
  std::vector<wire::Value> TakeReplay(Clock::time_point now);

  std::size_t kept() const { return kept_.size(); }
  std::size_t kept_bytes() const { return bytes_; }

 private:
  struct Kept {
    std::string jid;
    wire::Value load;
    std::size_t bytes = 0;
    Clock::time_point expires;
  };
  void DropExpired(Clock::time_point now);
  void DropOldest();

  const PublishReplayOptions options_;
  std::deque<Kept> kept_;  // publish order
  std::size_t bytes_ = 0;
  bool scheduled_ = false;  // from OnSubscriber's answer to TakeReplay
};

}  // namespace halite::master
