// RecentSet: the last `capacity` distinct strings inserted (older ones are forgotten first),
// e.g. the jids a master has published already, however each reached it. Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <set>
#include <string>

namespace halite {

class RecentSet {
 public:
  explicit RecentSet(std::size_t capacity) : capacity_(capacity) {}
  // True when `value` is new (and now remembered).
  bool Insert(const std::string& value) {
    std::lock_guard lock(mu_);
    if (!set_.insert(value).second) return false;
    order_.push_back(value);
    if (order_.size() > capacity_) {
      set_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }
  bool Contains(const std::string& value) const {
    std::lock_guard lock(mu_);
    return set_.count(value) != 0;
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<std::string> order_;
  std::set<std::string> set_;
};

}  // namespace halite
