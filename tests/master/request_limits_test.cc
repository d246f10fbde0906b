#include "halite/master/request_limits.h"

#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace halite::master {
namespace {

using namespace std::chrono_literals;

TEST(ReplayGuardTest, ANonceIsAdmittedOncePerMinion) {
  ReplayGuard guard(8, 300s);
  EXPECT_TRUE(guard.Admit("web1", "n1", 1000, 1000));
  EXPECT_FALSE(guard.Admit("web1", "n1", 1000, 1001));
  EXPECT_TRUE(guard.Admit("web2", "n1", 1000, 1001));  // another minion's nonces are its own
  EXPECT_TRUE(guard.Admit("web1", "n2", 1000, 1001));
}

TEST(ReplayGuardTest, NoncesAreForgottenOnlyOnceOutOfTheWindow) {
  ReplayGuard guard(8, 300s);
  EXPECT_TRUE(guard.Admit("web1", "n1", 1000, 1000));
  EXPECT_FALSE(guard.Admit("web1", "n1", 1000, 1300));
  EXPECT_EQ(guard.remembered(), 1u);
  // Past the window the entry goes; the age check (request_server_ttl) refuses the request.
  EXPECT_TRUE(guard.Admit("web1", "n3", 1301, 1301));
  EXPECT_EQ(guard.remembered(), 1u);
}

TEST(ReplayGuardTest, AFullListRaisesTheFloorSoNoForgottenNonceComesBack) {
  ReplayGuard guard(3, 300s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(guard.Admit("web1", "n" + std::to_string(i), 1000 + i, 1010));
  }
  EXPECT_TRUE(guard.Admit("web1", "n3", 1003, 1010));  // evicts n0 (ts 1000): floor 1000
  EXPECT_EQ(guard.remembered(), 3u);
  EXPECT_FALSE(guard.Admit("web1", "n0", 999, 1010));  // stamped before the floor
  EXPECT_TRUE(guard.Admit("web1", "n4", 1004, 1010));  // evicts n1: floor 1001
  EXPECT_FALSE(guard.Admit("web1", "n0", 1000, 1010));
  EXPECT_FALSE(guard.Admit("web1", "n3", 1003, 1010));  // still remembered
}

TEST(ReplayGuardTest, ForgetDropsAMinion) {
  ReplayGuard guard(8, 300s);
  EXPECT_TRUE(guard.Admit("web1", "n1", 1000, 1000));
  guard.Forget("web1");
  EXPECT_EQ(guard.remembered(), 0u);
  EXPECT_TRUE(guard.Admit("web1", "n1", 1000, 1000));
}

TEST(EventRateLimiterTest, BurstThenRate) {
  EventRateLimiter limiter(/*rate=*/10, /*burst=*/20);
  const auto t0 = std::chrono::steady_clock::time_point() + 1h;
  EXPECT_EQ(limiter.Take("web1", 15, t0), 15u);
  EXPECT_EQ(limiter.Take("web1", 15, t0), 5u);
  EXPECT_EQ(limiter.Take("web1", 15, t0), 0u);
  EXPECT_EQ(limiter.Take("web2", 15, t0), 15u);  // per minion
  EXPECT_EQ(limiter.Take("web1", 15, t0 + 1s), 10u);
  EXPECT_EQ(limiter.Take("web1", 100, t0 + 1h), 20u);  // never above the burst
}

// A pool that runs posted tasks only when the test says so.
struct ManualPool {
  std::deque<std::function<void()>> tasks;
  MinionSlots::Post post() {
    return [this](std::function<void()> task) { tasks.push_back(std::move(task)); };
  }
  void RunOne() {
    ASSERT_FALSE(tasks.empty());
    auto task = std::move(tasks.front());
    tasks.pop_front();
    task();
  }
};

TEST(MinionSlotsTest, AMinionsRequestsBeyondItsShareWaitInItsOwnQueue) {
  ManualPool pool;
  MinionSlots slots(1, 2, 1 << 20, pool.post());
  std::vector<std::string> ran;
  // While web1's first request runs, its next ones wait (the third is one too many); db1's
  // runs at once.
  EXPECT_TRUE(slots.Run("web1", 10, [&] {
    ran.push_back("web1-1");
    EXPECT_TRUE(slots.Run("web1", 10, [&] { ran.push_back("web1-2"); }));
    EXPECT_TRUE(slots.Run("web1", 10, [&] { ran.push_back("web1-3"); }));
    EXPECT_FALSE(slots.Run("web1", 10, [&] { ran.push_back("web1-dropped"); }));
    EXPECT_TRUE(slots.Run("db1", 10, [&] { ran.push_back("db1-1"); }));
    EXPECT_EQ(slots.waiting(), 2u);
  }));
  EXPECT_EQ(ran, (std::vector<std::string>{"web1-1", "db1-1"}));
  EXPECT_EQ(slots.dropped(), 1u);
  // Each finished request hands web1's slot to its next, through the back of the pool.
  ASSERT_EQ(pool.tasks.size(), 1u);
  pool.RunOne();
  EXPECT_EQ(ran.back(), "web1-2");
  ASSERT_EQ(pool.tasks.size(), 1u);
  EXPECT_EQ(slots.waiting(), 0u);
  // web1's slot is still taken (by web1-3, posted): a new request waits for it.
  EXPECT_TRUE(slots.Run("web1", 10, [&] { ran.push_back("web1-4"); }));
  EXPECT_EQ(ran.back(), "web1-2");
  pool.RunOne();
  pool.RunOne();
  EXPECT_EQ(ran, (std::vector<std::string>{"web1-1", "db1-1", "web1-2", "web1-3", "web1-4"}));
  EXPECT_TRUE(pool.tasks.empty());
  // Free again: the next runs at once.
  EXPECT_TRUE(slots.Run("web1", 10, [&] { ran.push_back("web1-5"); }));
  EXPECT_EQ(ran.back(), "web1-5");
}

TEST(MinionSlotsTest, WaitingBytesAreBoundedForAllMinionsTogether) {
  ManualPool pool;
  MinionSlots slots(1, 100, 100, pool.post());
  EXPECT_TRUE(slots.Run("web1", 1000, [&] {  // a running request's size does not count
    EXPECT_TRUE(slots.Run("web1", 60, [] {}));
    EXPECT_TRUE(slots.Run("db1", 1000, [&] {
      EXPECT_FALSE(slots.Run("db1", 41, [] {}));  // 60 + 41 > 100
      EXPECT_TRUE(slots.Run("db1", 40, [] {}));
    }));
  }));
  EXPECT_EQ(slots.dropped(), 1u);
  EXPECT_EQ(slots.waiting(), 0u);
  EXPECT_EQ(pool.tasks.size(), 2u);
}

TEST(MinionSlotsTest, AThrowingRequestStillHandsItsSlotOn) {
  ManualPool pool;
  MinionSlots slots(1, 4, 1 << 20, pool.post());
  bool second_ran = false;
  EXPECT_THROW(slots.Run("web1", 1,
                         [&] {
                           EXPECT_TRUE(slots.Run("web1", 1, [&] { second_ran = true; }));
                           throw std::runtime_error("handler failed");
                         }),
               std::runtime_error);
  pool.RunOne();
  EXPECT_TRUE(second_ran);
  bool third_ran = false;
  EXPECT_TRUE(slots.Run("web1", 1, [&] { third_ran = true; }));
  EXPECT_TRUE(third_ran);  // the slot was given back
}

}  // namespace
}  // namespace halite::master
