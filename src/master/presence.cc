#include "halite/master/presence.h"

#include <algorithm>
#include <iterator>

#include "halite/wire/msgpack.h"

namespace halite::master {

void Presence::Seen(std::string_view id, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = last_seen_.try_emplace(std::string(id), now);
  if (!inserted && it->second < now) it->second = now;
}

std::vector<std::string> Presence::Present(Clock::duration window, Clock::time_point now) {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    if (now - it->second > window) {
      it = last_seen_.erase(it);
      continue;
    }
    out.push_back(it->first);
    ++it;
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

wire::Value List(const std::vector<std::string>& ids) {
  wire::Array a;
  for (const auto& id : ids) a.emplace_back(id);
  return wire::Value(std::move(a));
}

}  // namespace

void PresenceReporter::Tick(Presence& presence, EventSink& events, Presence::Clock::duration window,
                            Presence::Clock::time_point now) {
  const std::vector<std::string> present = presence.Present(window, now);
  std::vector<std::string> added, lost;
  std::set<std::string> current(present.begin(), present.end());
  std::set_difference(current.begin(), current.end(), last_.begin(), last_.end(),
                      std::back_inserter(added));
  std::set_difference(last_.begin(), last_.end(), current.begin(), current.end(),
                      std::back_inserter(lost));
  if (!added.empty() || !lost.empty()) {
    events.Fire("salt/presence/change",
                wire::Value::MapOf({{"new", List(added)}, {"lost", List(lost)}}));
  }
  events.Fire("salt/presence/present", wire::Value::MapOf({{"present", List(present)}}));
  last_ = std::move(current);
}

}  // namespace halite::master
