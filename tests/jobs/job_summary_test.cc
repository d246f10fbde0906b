#include "halite/jobs/job_summary.h"

#include <gtest/gtest.h>

namespace halite::jobs {
namespace {

TEST(JobSummaryTest, MissingFieldsTakeSaltDefaults) {
  const JobSummary summary = SummarizeJob("20250101120000123456", wire::Value::EmptyMap());
  EXPECT_EQ(summary.jid, "20250101120000123456");
  EXPECT_EQ(summary.function, "unknown-function");
  EXPECT_EQ(summary.arguments, wire::Value::EmptyArray());
  EXPECT_EQ(summary.target, "unknown-target");
  EXPECT_EQ(summary.target_type, "list");
  EXPECT_EQ(summary.user, "root");
  EXPECT_EQ(summary.start_time, "2025, Jan 01 12:00:00.123456");
}

TEST(JobSummaryTest, ReadsTheLoad) {
  const wire::Value load = wire::Value::MapOf({{"fun", wire::Value("state.apply")},
                                               {"arg", wire::Value(wire::Array{"web"})},
                                               {"tgt", wire::Value("G@os:Debian")},
                                               {"tgt_type", wire::Value("compound")},
                                               {"user", wire::Value("sudo_bob")}});
  const JobSummary summary = SummarizeJob("req", load);
  EXPECT_EQ(summary.function, "state.apply");
  EXPECT_EQ(summary.arguments, wire::Value(wire::Array{"web"}));
  EXPECT_EQ(summary.target, "G@os:Debian");
  EXPECT_EQ(summary.target_type, "compound");
  EXPECT_EQ(summary.user, "sudo_bob");
  EXPECT_EQ(summary.start_time, "");
}

}  // namespace
}  // namespace halite::jobs
