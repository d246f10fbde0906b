// What minion.cc (lifecycle, sign-in, requests) and minion_jobs.cc (publishes, jobs) share.
// Loop-thread helpers of Minion. Internal.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "halite/minion/minion.h"

namespace halite::minion {

namespace internal {

inline std::string Endpoint(const std::string& ip, std::uint16_t port) {
  bool v6 = ip.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

inline std::uint64_t JidHash(std::string_view jid) {
  return std::hash<std::string_view>{}(jid) | 1;  // 0 marks an empty slot
}

inline std::string JidText(const wire::Value* jid) {
  if (jid == nullptr) return "";
  if (const std::string* s = jid->str()) return *s;
  return jid->ToJson();
}

inline std::minstd_rand& Rng() {
  thread_local std::minstd_rand rng(std::random_device{}());
  return rng;
}

// Destroys `owned` in a later loop task: the caller may be running inside one of its callbacks.
template <typename T>
void DestroyLater(transport::ZmqLoop& loop, std::unique_ptr<T>& owned) {
  if (!owned) return;
  loop.Post([doomed = std::shared_ptr<T>(std::move(owned))] {});
}

}  // namespace internal

// Runs fn(minion) on its loop later, if the minion still exists and has not been stopped.
// Callable from any thread.
template <typename Fn>
void PostToMinion(transport::ZmqLoop& loop, std::weak_ptr<Minion> weak, Fn fn) {
  loop.Post([weak = std::move(weak), fn = std::move(fn)]() mutable {
    std::shared_ptr<Minion> self = weak.lock();
    if (self && !self->stopped_) fn(*self);
  });
}

}  // namespace halite::minion
