// Waiting on state that has no notification (a counter, a file, an HTTP answer): poll the
// condition until it holds or a generous deadline passes. Never a sleep standing in for one.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace halite::testing {

inline bool WaitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30),
                      std::chrono::milliseconds poll = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace halite::testing
