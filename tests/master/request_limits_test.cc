#include "halite/master/request_limits.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace halite::master
