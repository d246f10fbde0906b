// JobCacheScan over a real local job cache: which saved jobs a scan publishes to this
// master's minions (the jobs no peer forwarded).
#include "halite/master/job_cache_scan.h"

#include <gtest/gtest.h>

#include <mutex>

#include "halite/jobs/jid.h"
#include "halite/jobs/local_job_cache.h"
#include "scratch_dir.h"

namespace halite::master {
namespace {

using namespace std::chrono_literals;
using wire::Value;

class Recorder final : public JobPublisher {
 public:
  Status Publish(Value pub_load) override {
    std::lock_guard lock(mu_);
    const std::string* jid = pub_load.FindStr("jid");
    jids_.push_back(jid ? *jid : std::string());
    return OkStatus();
  }
  std::vector<std::string> jids() {
    std::lock_guard lock(mu_);
    return jids_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> jids_;
};

// A window holding more jobs than one read of the job cache (`max`) is scanned page by page:
// before, the jobs past the first `max` waited until the first ones aged out of the window,
// so a busy cluster, or a minion's own jobs placed at the start of the window, delayed them.
TEST(JobCacheScanTest, AWindowOfMoreJobsThanOneReadIsScannedWhole) {
  halite::testing::ScratchDir dir;
  jobs::LocalJobCacheOptions options;
  options.cachedir = dir.path();
  auto cache = jobs::LocalJobCache::Open(options);
  ASSERT_TRUE(cache.ok()) << cache.error().ToString();
  const auto now = std::chrono::system_clock::now();
  std::vector<std::string> saved;
  for (int i = 0; i < 7; ++i) {
    const std::string jid = jobs::GenerateJid(now - 30s + std::chrono::milliseconds(i));
    // Jids that share the first one as a prefix sort right after it: the next page must
    // start past it without skipping them.
    const std::string suffixed = jid + "_" + std::to_string(i);
    for (const std::string& j : {jid, suffixed}) {
      Value load = Value::MapOf({{"jid", j},
                                 {"fun", "test.ping"},
                                 {"tgt", "web1"},
                                 {"tgt_type", "glob"},
                                 {"arg", Value::EmptyArray()}});
      ASSERT_TRUE((*cache)->SaveJob(jobs::Job{j, load, {"web1"}}).ok());
      saved.push_back(j);
    }
  }
  Recorder local;
  RecentJobs recent(64);
  RecentSet published(1000);
  JobCacheScan scan(**cache, local, recent, published,
                    JobCacheScanOptions{.window = 60s, .settle = 2s, .max = 3, .max_pages = 10});
  scan.Run();
  std::vector<std::string> got = local.jids();
  std::sort(got.begin(), got.end());
  std::sort(saved.begin(), saved.end());
  EXPECT_EQ(got, saved);
  // A second scan publishes nothing again.
  scan.Run();
  EXPECT_EQ(local.jids().size(), saved.size());
}

// And the pages per scan are bounded: 2 pages of 3 reach 6 of the 14 jobs.
TEST(JobCacheScanTest, AScanReadsAtMostMaxPagesOfJobs) {
  halite::testing::ScratchDir dir;
  jobs::LocalJobCacheOptions options;
  options.cachedir = dir.path();
  auto cache = jobs::LocalJobCache::Open(options);
  ASSERT_TRUE(cache.ok()) << cache.error().ToString();
  const auto now = std::chrono::system_clock::now();
  for (int i = 0; i < 14; ++i) {
    const std::string jid = jobs::GenerateJid(now - 30s + std::chrono::milliseconds(i));
    Value load = Value::MapOf({{"jid", jid}, {"fun", "test.ping"}, {"tgt", "web1"}});
    ASSERT_TRUE((*cache)->SaveJob(jobs::Job{jid, load, {"web1"}}).ok());
  }
  Recorder local;
  RecentJobs recent(64);
  RecentSet published(1000);
  JobCacheScan scan(**cache, local, recent, published,
                    JobCacheScanOptions{.window = 60s, .settle = 2s, .max = 3, .max_pages = 2});
  scan.Run();
  EXPECT_EQ(local.jids().size(), 6u);
}

}  // namespace
}  // namespace halite::master
