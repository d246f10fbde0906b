#include "halite/master/request_limits.h"

#include <algorithm>
#include <functional>

namespace halite::master {

bool ReplayGuard::Admit(std::string_view id, std::string_view nonce, std::int64_t ts,
                        std::int64_t now) {
  const std::uint64_t hash = std::hash<std::string_view>{}(nonce);
  std::lock_guard lock(mu_);
  Minion& m = minions_[std::string(id)];
  while (!m.seen.empty() && m.seen.front().ts < now - window_) {
    m.seen.pop_front();
    --total_;
  }
  if (ts < m.floor) return false;
  for (const Seen& s : m.seen) {
    if (s.nonce_hash == hash) return false;
  }
  if (m.seen.size() >= per_minion_) {
    m.floor = std::max(m.floor, m.seen.front().ts);
    m.seen.pop_front();
    --total_;
  }
  m.seen.push_back(Seen{hash, ts});
  ++total_;
  return true;
}

void ReplayGuard::Forget(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = minions_.find(std::string(id));
  if (it == minions_.end()) return;
  total_ -= it->second.seen.size();
  minions_.erase(it);
}

std::size_t ReplayGuard::remembered() const {
  std::lock_guard lock(mu_);
  return total_;
}

std::size_t EventRateLimiter::Take(std::string_view id, std::size_t wanted,
                                   std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto refill = [&](Bucket& b) {
    const double elapsed = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * rate_);
    b.last = now;
  };
  // Once a minute, forget the buckets that have refilled: they would grant a full burst anyway.
  if (now - last_sweep_ > std::chrono::minutes(1)) {
    last_sweep_ = now;
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      refill(it->second);
      it = it->second.tokens >= burst_ ? buckets_.erase(it) : std::next(it);
    }
  }
  auto [it, inserted] = buckets_.try_emplace(std::string(id), Bucket{burst_, now});
  Bucket& b = it->second;
  if (!inserted) refill(b);
  const std::size_t granted =
      std::min<std::size_t>(wanted, static_cast<std::size_t>(std::max(0.0, b.tokens)));
  b.tokens -= static_cast<double>(granted);
  return granted;
}

}  // namespace halite::master
