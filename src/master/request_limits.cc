#include "halite/master/request_limits.h"

#include <algorithm>
#include <functional>
#include <memory>

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

bool MinionSlots::Run(const std::string& id, std::size_t bytes, std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    Minion& m = minions_[id];
    if (m.running >= running_) {
      if (m.waiting.size() >= waiting_ || waiting_total_bytes_ + bytes > waiting_bytes_) {
        dropped_++;
        return false;
      }
      m.waiting.push_back(Waiting{bytes, std::move(work)});
      ++waiting_count_;
      waiting_total_bytes_ += bytes;
      return true;
    }
    ++m.running;
  }
  RunInSlot(id, std::move(work));
  return true;
}

void MinionSlots::RunInSlot(const std::string& id, std::function<void()> work) {
  struct Handover {
    MinionSlots& slots;
    const std::string& id;
    ~Handover() {
      std::function<void()> next;
      {
        std::lock_guard lock(slots.mu_);
        auto it = slots.minions_.find(id);
        HALITE_CHECK(it != slots.minions_.end());
        Minion& m = it->second;
        if (m.waiting.empty()) {
          if (--m.running == 0) slots.minions_.erase(it);
          return;
        }
        next = std::move(m.waiting.front().work);
        --slots.waiting_count_;
        slots.waiting_total_bytes_ -= m.waiting.front().bytes;
        m.waiting.pop_front();
      }
      // The slot passes to the next request, which joins the back of the pool's queue (or,
      // if that cannot be done, runs here: it must not be stranded).
      auto shared = std::make_shared<std::function<void()>>(std::move(next));
      try {
        slots.post_([&slots = slots, id = id, shared] { slots.RunInSlot(id, std::move(*shared)); });
      } catch (...) {
        slots.RunInSlot(id, std::move(*shared));
      }
    }
  } handover{*this, id};
  work();
}

std::size_t MinionSlots::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_count_;
}

}  // namespace halite::master
