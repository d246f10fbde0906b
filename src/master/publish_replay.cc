#include "halite/master/publish_replay.h"

#include <algorithm>

namespace halite::master {

namespace {

// The publish's own timeout: Salt's LocalClient sends "to" (seconds) and the master passes
// it on in the minion's load.
std::optional<std::chrono::milliseconds> LoadTimeout(const wire::Value& load) {
  const wire::Value* to = load.Find("to");
  if (to == nullptr) return std::nullopt;
  if (auto n = to->int64(); n && *n > 0) return std::chrono::seconds(*n);
  return std::nullopt;
}

}  // namespace

void PublishReplay::Remember(const wire::Value& load, Clock::time_point now) {
  const std::string* jid = load.FindStr("jid");
  if (jid == nullptr || jid->empty()) return;
  DropExpired(now);
  auto same =
      std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.jid == *jid; });
  if (same != kept_.end()) {
    bytes_ -= same->bytes;
    kept_.erase(same);
  }
  auto window = std::min(LoadTimeout(load).value_or(options_.default_window), options_.max_window);
  Kept k{*jid, load, wire::Pack(load).size(), now + window};
  if (k.bytes > options_.max_bytes) return;  // one huge job does not flush every other one
  bytes_ += k.bytes;
  kept_.push_back(std::move(k));
  while (kept_.size() > options_.max_jobs || bytes_ > options_.max_bytes) DropOldest();
}

std::optional<PublishReplay::Clock::time_point> PublishReplay::OnSubscriber(Clock::time_point now) {
  if (scheduled_) return std::nullopt;
  DropExpired(now);
  if (kept_.empty()) return std::nullopt;
  scheduled_ = true;
  return now + options_.debounce;
}

std::vector<wire::Value> PublishReplay::TakeReplay(Clock::time_point now) {
  scheduled_ = false;
  DropExpired(now);
  std::vector<wire::Value> loads;
  loads.reserve(kept_.size());
  for (const Kept& k : kept_) loads.push_back(k.load);
  return loads;
}

void PublishReplay::DropExpired(Clock::time_point now) {
  // Windows differ per job, so an expired entry may sit behind a live one.
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->expires <= now) {
      bytes_ -= it->bytes;
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

void PublishReplay::DropOldest() {
  bytes_ -= kept_.front().bytes;
  kept_.pop_front();
}

}  // namespace halite::master
