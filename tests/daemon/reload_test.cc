// PlanReload: which changed keys a SIGHUP applies and which wait for a restart.
#include "halite/daemon/reload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace halite::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

config::MasterConfig Parse(const std::string& yaml) {
  auto loaded = config::ParseMasterConfig(yaml);
  EXPECT_TRUE(loaded.ok()) << loaded.error().ToString();
  return loaded.ok() ? loaded->config : config::MasterConfig{};
}

TEST(ReloadPlanTest, LiveKeysAreTakenOverAndTheOthersKeepTheirRunningValues) {
  auto running = Parse(
      "id: m1\nauto_accept: false\nworker_threads: 5\nlog_level: info\n"
      "pillar_roots: {base: [/srv/a]}\nkeep_jobs_seconds: 60\n");
  auto next = Parse(
      "id: m1\nauto_accept: true\nworker_threads: 9\nlog_level: debug\n"
      "pillar_roots: {base: [/srv/b]}\nkeep_jobs_seconds: 60\npublish_port: 4600\n");
  ReloadPlan plan = PlanReload(running, next);
  EXPECT_THAT(plan.applied, ElementsAre("auto_accept", "log_level", "pillar_roots"));
  EXPECT_THAT(plan.need_restart, ElementsAre("publish_port", "worker_threads"));
  EXPECT_TRUE(plan.effective.auto_accept);
  EXPECT_EQ(plan.effective.log_level, "debug");
  EXPECT_EQ(plan.effective.pillar_roots.at("base"), std::vector<std::string>{"/srv/b"});
  EXPECT_EQ(plan.effective.worker_threads, 5);   // still the running value
  EXPECT_EQ(plan.effective.publish_port, 4505);  // ditto
  EXPECT_TRUE(plan.auth_changed);
  EXPECT_TRUE(plan.pillar_changed);
  EXPECT_TRUE(plan.log_level_changed);
}

TEST(ReloadPlanTest, AKeyRemovedFromTheFileReturnsToItsDefault) {
  auto running = Parse("auto_accept: true\nnodegroups: {web: 'web*'}\n");
  auto next = Parse("");
  ReloadPlan plan = PlanReload(running, next);
  EXPECT_THAT(plan.applied, ElementsAre("auto_accept", "nodegroups"));
  EXPECT_FALSE(plan.effective.auto_accept);
  EXPECT_TRUE(plan.effective.nodegroups.empty());
  EXPECT_TRUE(plan.pillar_changed);  // top files match nodegroups
}

TEST(ReloadPlanTest, AKeyThatNeedsARestartIsReportedAgainUntilTheRestart) {
  auto running = Parse("worker_threads: 5\n");
  auto next = Parse("worker_threads: 7\nauto_accept: true\n");
  ReloadPlan first = PlanReload(running, next);
  EXPECT_THAT(first.need_restart, ElementsAre("worker_threads"));
  // The second reload compares with what runs: auto_accept was applied, worker_threads not.
  ReloadPlan second = PlanReload(first.effective, next);
  EXPECT_THAT(second.applied, IsEmpty());
  EXPECT_THAT(second.need_restart, ElementsAre("worker_threads"));
}

TEST(ReloadPlanTest, AnUnchangedFileChangesNothing) {
  const std::string yaml = "id: m1\nauto_accept: true\njob_cache: {dsn: x}\n";
  ReloadPlan plan = PlanReload(Parse(yaml), Parse(yaml));
  EXPECT_THAT(plan.applied, IsEmpty());
  EXPECT_THAT(plan.need_restart, IsEmpty());
  EXPECT_FALSE(plan.auth_changed || plan.pillar_changed || plan.log_level_changed);
}

TEST(ReloadPlanTest, KeepJobsInEitherSpellingSetsTheRetention) {
  auto plan = PlanReload(Parse("keep_jobs_seconds: 60\n"), Parse("keep_jobs: 2\n"));
  EXPECT_THAT(plan.applied, ElementsAre("keep_jobs", "keep_jobs_seconds"));
  EXPECT_EQ(plan.effective.keep_jobs_seconds, std::chrono::seconds(7200));
}

TEST(ReloadPlanTest, JobCacheAndClusterSettingsNeedARestart) {
  auto plan = PlanReload(Parse("master_job_cache: local_cache\n"),
                         Parse("master_job_cache: postgres\njob_cache: {dsn: 'host=127.0.0.5'}\n"
                               "cluster_id: c\ncluster_peers: [127.0.0.9]\n"));
  EXPECT_THAT(plan.applied, IsEmpty());
  EXPECT_THAT(plan.need_restart,
              ElementsAre("cluster_id", "cluster_peers", "job_cache", "master_job_cache"));
}

}  // namespace
}  // namespace halite::daemon
