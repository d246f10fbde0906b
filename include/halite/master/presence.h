// Which minions this master sees, for salt/presence events and manage.present: a minion is
// present while its last authenticated request to this master (an accepted _auth, or any
// request whose id its token proved: returns, events, pillar, files, mine) is younger than
// the window the caller gives (twice loop_interval). Salt counts TCP connections to the
// publish port and matches their source addresses against cached ipv4/ipv6 grains; halite
// does not, because behind HAProxy every connection comes from HAProxy, and on one host or
// behind NAT one address stands for many minions (docs/cli.md, "Presence").
// Thread-safe: Seen runs on workers, the rest on the maintenance thread or a worker.
#pragma once

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "halite/common/check.h"
#include "halite/master/services.h"

namespace halite::master {

class Presence {
 public:
  using Clock = std::chrono::steady_clock;

  void Seen(std::string_view id, Clock::time_point now = Clock::now());
  // The ids seen within `window` before `now`, sorted; older ones are forgotten.
  std::vector<std::string> Present(Clock::duration window, Clock::time_point now = Clock::now());

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> last_seen_ HALITE_GUARDED_BY(mu_);
};

// Salt's Maintenance.handle_presence, called every loop_interval when presence_events is on:
// fires salt/presence/change {"new": [...], "lost": [...]} when the set changed since the last
// call, then salt/presence/present {"present": [...]}. Not thread-safe: one caller.
class PresenceReporter {
 public:
  void Tick(Presence& presence, EventSink& events, Presence::Clock::duration window,
            Presence::Clock::time_point now = Presence::Clock::now());

 private:
  std::set<std::string> last_;
};

}  // namespace halite::master
