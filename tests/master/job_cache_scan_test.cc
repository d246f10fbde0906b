// JobCacheScan over a real local job cache: which saved jobs a scan publishes to this
// master's minions (the jobs no peer forwarded).
#include "halite/master/job_cache_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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

// A real local job cache in a scratch dir, the scan's memories, and what it publishes.
class JobCacheScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    jobs::LocalJobCacheOptions options;
    options.cachedir = dir_.path();
    auto cache = jobs::LocalJobCache::Open(options);
    ASSERT_TRUE(cache.ok()) << cache.error().ToString();
    cache_ = std::move(*cache);
  }
  // Saves a job a master published, for minion web1.
  void Save(const std::string& jid) {
    Value load = Value::MapOf({{"jid", jid},
                               {"fun", "test.ping"},
                               {"tgt", "web1"},
                               {"tgt_type", "glob"},
                               {"arg", Value::EmptyArray()}});
    ASSERT_TRUE(cache_->SaveJob(jobs::Job{jid, load, {"web1"}}).ok());
  }
  // A scan reading `max` jids at a time, `max_pages` times.
  JobCacheScan Scan(std::size_t max, std::size_t max_pages) {
    return JobCacheScan(
        *cache_, local_, recent_, published_,
        JobCacheScanOptions{.window = 60s, .settle = 2s, .max = max, .max_pages = max_pages});
  }

  halite::testing::ScratchDir dir_;
  std::unique_ptr<jobs::LocalJobCache> cache_;
  Recorder local_;
  RecentJobs recent_{64};
  RecentSet published_{1000};
  const std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
};

// A window holding more jobs than one read of the job cache (`max`) is scanned page by page:
// before, the jobs past the first `max` waited until the first ones aged out of the window,
// so a busy cluster, or a minion's own jobs placed at the start of the window, delayed them.
TEST_F(JobCacheScanTest, AWindowOfMoreJobsThanOneReadIsScannedWhole) {
  std::vector<std::string> saved;
  for (int i = 0; i < 7; ++i) {
    const std::string jid = jobs::GenerateJid(now_ - 30s + std::chrono::milliseconds(i));
    // A jid with the one before it as a prefix sorts right after it: the next page must start
    // past the one before without skipping it.
    for (const std::string& j : {jid, jid + "_" + std::to_string(i)}) {
      Save(j);
      saved.push_back(j);
    }
  }
  JobCacheScan scan = Scan(/*max=*/3, /*max_pages=*/10);
  scan.Run();
  std::vector<std::string> got = local_.jids();
  std::sort(got.begin(), got.end());
  std::sort(saved.begin(), saved.end());
  EXPECT_EQ(got, saved);
  // A second scan publishes nothing again.
  scan.Run();
  EXPECT_EQ(local_.jids().size(), saved.size());
}

// And the pages per scan are bounded: 2 pages of 3 reach 6 of the 14 jobs.
TEST_F(JobCacheScanTest, AScanReadsAtMostMaxPagesOfJobs) {
  for (int i = 0; i < 14; ++i) Save(jobs::GenerateJid(now_ - 30s + std::chrono::milliseconds(i)));
  JobCacheScan scan = Scan(/*max=*/3, /*max_pages=*/2);
  scan.Run();
  EXPECT_EQ(local_.jids().size(), 6u);
}

}  // namespace
}  // namespace halite::master
