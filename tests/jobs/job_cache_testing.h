// Test helpers for JobCache backends: a scratch directory, and waiting for StoreReturn
// callbacks on a condition variable with a deadline (never a sleep).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "halite/jobs/job_cache.h"
#include "scratch_dir.h"

namespace halite::jobs::testing {

inline constexpr std::chrono::seconds kCallbackDeadline{60};

using ::halite::testing::ScratchDir;  // tests/support/scratch_dir.h

// "<prefix><n>" or "<prefix><n>-<m>". Appending (rather than "m" + std::to_string(n)) also
// avoids GCC 12's false -Wrestrict at -O3 (GCC bug 105651).
inline std::string Id(std::string_view prefix, long n, long m = -1) {
  std::string id(prefix);
  id.append(std::to_string(n));
  if (m >= 0) id.append("-").append(std::to_string(m));
  return id;
}

inline JobReturn MakeReturn(std::string jid, std::string minion_id, wire::Value ret,
                            std::optional<std::int64_t> retcode = std::nullopt,
                            std::optional<bool> success = std::nullopt, std::string out = {}) {
  JobReturn r;
  r.jid = std::move(jid);
  r.minion_id = std::move(minion_id);
  r.ret = std::move(ret);
  r.retcode = retcode;
  r.success = success;
  r.out = std::move(out);
  return r;
}

// Counts StoreReturn outcomes. Callbacks share the state, so a callback that comes after the
// tally is gone (a failed test) is still safe.
class OutcomeTally {
 public:
  OutcomeTally() : state_(std::make_shared<State>()) {}

  JobCache::StoreCallback Callback() {
    return [state = state_](Result<StoreOutcome> outcome) {
      std::lock_guard<std::mutex> lock(state->mu);
      if (!outcome.ok()) {
        ++state->errors;
        state->last_error = outcome.error().ToString();
      } else if (*outcome == StoreOutcome::kStored) {
        ++state->stored;
      } else {
        ++state->duplicates;
      }
      state->cv.notify_all();
    };
  }

  // True when `n` callbacks have run before the deadline.
  bool WaitFor(std::size_t n, std::chrono::seconds deadline = kCallbackDeadline) {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, deadline, [&] { return state_->total() >= n; });
  }

  std::size_t stored() const { return Get(&State::stored); }
  std::size_t duplicates() const { return Get(&State::duplicates); }
  std::size_t errors() const { return Get(&State::errors); }
  std::size_t total() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->total();
  }
  std::string last_error() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->last_error;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t stored = 0;
    std::size_t duplicates = 0;
    std::size_t errors = 0;
    std::string last_error;
    std::size_t total() const { return stored + duplicates + errors; }
  };
  std::size_t Get(std::size_t State::*field) const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return (*state_).*field;
  }

  std::shared_ptr<State> state_;
};

// Polls `condition` (state that has no notification of its own) until it holds or the
// deadline passes.
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::seconds deadline = kCallbackDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

// StoreReturn, then waits for its callback. DeadlineExceeded if it does not come in time.
inline Result<StoreOutcome> StoreAndWait(JobCache& cache, JobReturn ret,
                                         std::chrono::seconds deadline = kCallbackDeadline) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<StoreOutcome>> outcome;
  };
  auto state = std::make_shared<State>();
  cache.StoreReturn(std::move(ret), [state](Result<StoreOutcome> outcome) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->outcome.emplace(std::move(outcome));
    state->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mu);
  if (!state->cv.wait_for(lock, deadline, [&] { return state->outcome.has_value(); })) {
    return Error::DeadlineExceeded("no StoreReturn callback");
  }
  return std::move(*state->outcome);
}

}  // namespace halite::jobs::testing
