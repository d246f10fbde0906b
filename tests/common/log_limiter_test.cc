#include <gtest/gtest.h>

#include "halite/common/logging.h"

namespace halite {
namespace {

using std::chrono::milliseconds;

TEST(LogLimiterTest, OneLinePerPeriodAndTheNextLineCountsWhatWasHeldBack) {
  LogLimiter limiter(milliseconds(1000));
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  ASSERT_EQ(limiter.Pass(t0), std::optional<std::uint64_t>(0));
  EXPECT_EQ(limiter.Pass(t0 + milliseconds(1)), std::nullopt);
  EXPECT_EQ(limiter.Pass(t0 + milliseconds(500)), std::nullopt);
  EXPECT_EQ(limiter.Pass(t0 + milliseconds(999)), std::nullopt);
  EXPECT_EQ(limiter.Pass(t0 + milliseconds(1000)), std::optional<std::uint64_t>(3));
  EXPECT_EQ(limiter.Pass(t0 + milliseconds(2500)), std::optional<std::uint64_t>(0));
  EXPECT_EQ(SuppressedSuffix(0), "");
  EXPECT_EQ(SuppressedSuffix(3), " (3 more like it since the last)");
}

}  // namespace
}  // namespace halite
