// What a master re-publishes when minions (re)connect to its publisher: the jobs it sent or
// forwarded that are still within their timeout. A minion whose master died, or whose HAProxy
// session moved, reconnects to another master after the publish went out; PUB/SUB has no
// history, so without a replay that minion never runs the job (issue 16, docs/failure-modes.md).
// Replays go to every subscriber: minions that already have the jid drop it (Salt's jid_queue,
// minion_jid_queue_hwm), so a job still runs once per minion. A replay also leaves out every
// minion whose return this master has seen (`Returned`, fed from the event bus, where every
// master's returns pass): the target becomes `( <original> ) and not L@<returned>`, so a
// minion that restarted since (its jid queue is in memory) does not run a finished job again.
//
// Pure bookkeeping with the time passed in (tests drive it with a fake clock); the Publisher
// owns one and uses it on its loop thread only. Not thread-safe.
//
// Bounds: at most `max_jobs` loads and `max_bytes` of packed load (the oldest go first), each
// kept for its own window ("to" from the publish, else `default_window`, plus `grace`, at
// most `max_window`; the ids of returned minions count against `max_bytes`); a replay runs
// `debounce` after the first new subscriber and covers every one that arrives meanwhile, so a
// reconnect burst of thousands costs a handful. Rounds that follow one another back off: each
// waits twice as long as the one before, up to `max_interval`, and only after `max_interval`
// with no round is the wait `debounce` again. Anyone can subscribe on 4505, and every round
// sends every live job to every minion: a stranger's subscription frame every 200 ms made as
// many rounds (finding 20 in docs/security.md); now it gets one per `max_interval`.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "halite/wire/msgpack.h"

namespace halite::master {

// `load`'s target less `minions`, as a compound expression a stock minion matches:
// `( <original as a compound term> ) and not L@a,b`. nullopt when the original cannot be
// written as a compound term (a nodegroup, a custom delimiter, whitespace in a glob) or no
// id can be listed (ids with ',', whitespace or parentheses are left in).
std::optional<std::string> TargetExcluding(const wire::Value& load,
                                           const std::set<std::string, std::less<>>& minions);

struct PublishReplayOptions {
  std::chrono::milliseconds default_window{5000};  // the master's `timeout`
  std::chrono::milliseconds max_window{120000};
  // Added to every job's window (publish_replay_grace): the minions of a master that froze
  // or was cut off come back after HAProxy's detection plus their reconnect (up to
  // recon_default + recon_max, 11 s for a stock minion), often past a short timeout.
  std::chrono::milliseconds grace{30000};
  std::chrono::milliseconds debounce{200};
  std::chrono::milliseconds max_interval{5000};  // the longest wait of rounds backing off
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
  // `minion` returned job `jid` (a salt/job/<jid>/ret/<minion> event): later replays of that
  // job leave it out. Unknown jids are ignored.
  void Returned(std::string_view jid, std::string_view minion);
  // The scheduled replay is due: the loads still live at `now`, oldest first, each targeted
  // at its original target less the minions that returned.
  std::vector<wire::Value> TakeReplay(Clock::time_point now);

  std::size_t kept() const { return kept_.size(); }
  std::size_t kept_bytes() const { return bytes_; }

 private:
  struct Kept {
    std::string jid;
    wire::Value load;
    std::size_t bytes = 0;
    Clock::time_point expires;
    std::set<std::string, std::less<>> returned;
  };
  void DropExpired(Clock::time_point now);
  void DropOldest();
  void Bound();

  const PublishReplayOptions options_;
  std::deque<Kept> kept_;  // publish order
  std::size_t bytes_ = 0;
  bool scheduled_ = false;  // from OnSubscriber's answer to TakeReplay
  std::optional<Clock::time_point> last_round_;
  std::chrono::milliseconds wait_{0};  // of the next round after its first subscriber
};

}  // namespace halite::master
