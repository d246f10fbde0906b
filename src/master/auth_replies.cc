#include "halite/master/auth_replies.h"

#include "halite/wire/encoding.h"

namespace halite::master {

std::string AuthReplies::Digest(std::string_view id, int version, std::string_view packed_load) {
  std::string text;
  text.reserve(id.size() + packed_load.size() + 16);
  text.append(id);
  text.push_back('\0');
  text.append(std::to_string(version));
  text.push_back('\0');
  text.append(packed_load);
  return wire::Sha256(text);
}

std::size_t AuthReplies::Cost(const std::string& digest, const Entry& e) {
  // Twice the key: it is held by the map and by the order queue.
  return 2 * digest.size() + e.reply.size() + e.basis.aes_key.size() + e.basis.session_key.size() +
         128;
}

void AuthReplies::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  bytes_ -= Cost(it->first, it->second);
  entries_.erase(it);
}

void AuthReplies::ExpireLocked(Clock::time_point now) {
  while (!order_.empty() && (bytes_ > max_bytes_ || now - order_.front().first >= max_age_)) {
    auto it = entries_.find(order_.front().second);
    // Only the entry this queue slot was made for: one added again later has its own slot.
    if (it != entries_.end() && it->second.added == order_.front().first) EraseLocked(it);
    order_.pop_front();
  }
}

std::optional<AuthReplies::Kept> AuthReplies::Find(const std::string& digest,
                                                   Clock::time_point now) {
  std::lock_guard lock(mu_);
  ExpireLocked(now);
  auto it = entries_.find(digest);
  if (it == entries_.end()) return std::nullopt;
  return Kept{it->second.basis, it->second.reply};
}

void AuthReplies::Drop(const std::string& digest) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(digest); it != entries_.end()) EraseLocked(it);
}

void AuthReplies::Put(const std::string& digest, Basis basis, std::string reply,
                      Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (auto old = entries_.find(digest); old != entries_.end()) EraseLocked(old);
  Entry e{std::move(basis), std::move(reply), now};
  const std::size_t cost = Cost(digest, e);
  if (cost > max_bytes_) return;
  bytes_ += cost;
  entries_.emplace(digest, std::move(e));
  order_.emplace_back(now, digest);
  ExpireLocked(now);
}

std::size_t AuthReplies::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::size_t AuthReplies::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace halite::master
