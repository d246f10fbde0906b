// The behaviour every JobCache backend must have (job_cache.h), run against each of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "halite/jobs/job_cache.h"
#include "halite/jobs/local_job_cache.h"
#include "job_cache_testing.h"
#ifdef HALITE_WITH_POSTGRES
#include "halite/jobs/jid.h"
#include "postgres_testing.h"
#endif

namespace halite::jobs {
namespace {

using testing::Id;
using testing::MakeReturn;
using testing::OutcomeTally;
using testing::ScratchDir;
using testing::StoreAndWait;
using namespace std::chrono_literals;

struct JobCacheUnderTest {
  std::string name;
  // A fresh, empty store; `dir` is a fresh scratch directory that outlives the instance.
  std::function<std::unique_ptr<JobCache>(const std::filesystem::path& dir)> make;

  friend void PrintTo(const JobCacheUnderTest& backend, std::ostream* os) { *os << backend.name; }
};

enum class FilePaths { kFastest, kRenameOnly, kLinkOnly };

std::unique_ptr<JobCache> MakeLocal(const std::filesystem::path& dir,
                                    LocalJobCacheOptions::FsyncMode mode,
                                    std::size_t io_threads = 2,
                                    FilePaths paths = FilePaths::kFastest) {
  LocalJobCacheOptions options;
  options.cachedir = dir;
  options.fsync_mode = mode;
  options.io_threads = io_threads;
  auto cache = LocalJobCache::Open(options);
  HALITE_CHECK(cache.ok()) << cache.error().ToString();
  if (paths != FilePaths::kFastest) (*cache)->DisableTmpfileForTest();
  if (paths == FilePaths::kLinkOnly) (*cache)->DisableRenameNoreplaceForTest();
  return std::move(cache).value();
}

std::vector<JobCacheUnderTest> AvailableJobCaches() {
  std::vector<JobCacheUnderTest> backends = {
      {"local_cache_syncfs",
       [](const std::filesystem::path& dir) {
         return MakeLocal(dir, LocalJobCacheOptions::FsyncMode::kSyncfs);
       }},
      {"local_cache_per_file",
       [](const std::filesystem::path& dir) {
         return MakeLocal(dir, LocalJobCacheOptions::FsyncMode::kPerFile);
       }},
      {"local_cache_one_thread",
       [](const std::filesystem::path& dir) {
         return MakeLocal(dir, LocalJobCacheOptions::FsyncMode::kSyncfs, 1);
       }},
      // The file system paths of FUSE / NFS: no O_TMPFILE, no renameat2 flags.
      {"local_cache_rename_only",
       [](const std::filesystem::path& dir) {
         return MakeLocal(dir, LocalJobCacheOptions::FsyncMode::kPerFile, 4,
                          FilePaths::kRenameOnly);
       }},
      {"local_cache_link_only",
       [](const std::filesystem::path& dir) {
         return MakeLocal(dir, LocalJobCacheOptions::FsyncMode::kSyncfs, 2, FilePaths::kLinkOnly);
       }},
  };
#ifdef HALITE_WITH_POSTGRES
  // A real server: HALITE_TEST_PG_DSN's, or one this process starts (postgres_testing.h); a
  // fresh schema per instance. The directory is unused.
  backends.push_back({"postgres", [](const std::filesystem::path&) {
                        return std::unique_ptr<JobCache>(
                            testing::OpenPg(testing::PgOptions(testing::SharedPgDsn())));
                      }});
#endif
  return backends;
}

wire::Value PublishLoad(const std::string& jid, const std::string& fun = "test.ping") {
  return wire::Value::MapOf({{"fun", wire::Value(fun)},
                             {"arg", wire::Value(wire::Array{wire::Value("a1"), wire::Value(2)})},
                             {"tgt", wire::Value("web*")},
                             {"tgt_type", wire::Value("glob")},
                             {"jid", wire::Value(jid)},
                             {"user", wire::Value("alice")},
                             {"kwargs", wire::Value::MapOf({{"show_jid", wire::Value(false)}})}});
}

std::vector<std::string> MapKeys(const wire::Value& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : *map.map()) keys.push_back(*key.str());
  return keys;
}

class JobCacheContractTest : public ::testing::TestWithParam<JobCacheUnderTest> {
 protected:
  void SetUp() override { cache_ = GetParam().make(dir_.path()); }
  void TearDown() override { cache_.reset(); }

  ScratchDir dir_;
  std::unique_ptr<JobCache> cache_;
};

TEST_P(JobCacheContractTest, UnknownJidIsNotFound) {
  auto returns = cache_->LoadReturns("20990101000000000000");
  ASSERT_FALSE(returns.ok());
  EXPECT_EQ(returns.error().code, ErrorCode::kNotFound);
  auto job = cache_->LoadJob("20990101000000000000");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kNotFound);
}

TEST_P(JobCacheContractTest, SaveJobThenLoadJobRoundTrips) {
  const std::string jid = "20250101120000123456";
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"web3", "web1", "web2"}}).ok());
  auto job = cache_->LoadJob(jid);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->jid, jid);
  EXPECT_EQ(job->load, PublishLoad(jid));
  EXPECT_EQ(MapKeys(job->load),
            (std::vector<std::string>{"fun", "arg", "tgt", "tgt_type", "jid", "user", "kwargs"}));
  EXPECT_EQ(job->minions, (std::vector<std::string>{"web1", "web2", "web3"}));
}

TEST_P(JobCacheContractTest, SaveJobNeverStoresTheKey) {
  const std::string jid = "20250101120000123457";
  wire::Value load = PublishLoad(jid);
  load.Set("key", wire::Value("the-root-key"));
  ASSERT_TRUE(cache_->SaveJob({jid, load, {"web1"}}).ok());
  auto job = cache_->LoadJob(jid);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->load.Find("key"), nullptr);
  EXPECT_EQ(job->load, PublishLoad(jid));
}

TEST_P(JobCacheContractTest, SaveJobTwiceMergesMinions) {
  const std::string jid = "20250101120000123458";
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"b", "a"}}).ok());
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"c", "a"}}).ok());
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"a"}}).ok());  // idempotent
  auto job = cache_->LoadJob(jid);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->minions, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_P(JobCacheContractTest, StoredReturnIsLoaded) {
  const std::string jid = "20250101120000123459";
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"web1", "web2"}}).ok());
  wire::Value value = wire::Value::MapOf({{"pid", wire::Value(42)},
                                          {"stdout", wire::Value("hi")},
                                          {"blob", wire::Value::Bin(std::string("\x00\xff", 2))}});
  auto stored = StoreAndWait(*cache_, MakeReturn(jid, "web1", value, 0, true, "nested"));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(*stored, StoreOutcome::kStored);
  stored = StoreAndWait(*cache_, MakeReturn(jid, "web2", wire::Value(true)));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();

  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  ASSERT_EQ(returns->size(), 2u);
  const JobReturn& first = (*returns)[0];
  EXPECT_EQ(first.jid, jid);
  EXPECT_EQ(first.minion_id, "web1");
  EXPECT_EQ(first.ret, value);
  EXPECT_EQ(first.retcode, 0);
  EXPECT_EQ(first.success, true);
  EXPECT_EQ(first.out, "nested");
  const JobReturn& second = (*returns)[1];
  EXPECT_EQ(second.minion_id, "web2");
  EXPECT_EQ(second.ret, wire::Value(true));
  EXPECT_EQ(second.retcode, std::nullopt);
  EXPECT_EQ(second.success, std::nullopt);
  EXPECT_EQ(second.out, "");
}

TEST_P(JobCacheContractTest, SavedJobWithoutReturnsHasNone) {
  const std::string jid = "20250101120000123460";
  ASSERT_TRUE(cache_->SaveJob({jid, PublishLoad(jid), {"web1"}}).ok());
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_TRUE(returns->empty());
}

TEST_P(JobCacheContractTest, DuplicateReturnKeepsTheFirst) {
  const std::string jid = "20250101120000123461";
  auto first = StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value("first"), 0));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(*first, StoreOutcome::kStored);
  auto second = StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value("second"), 1));
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  EXPECT_EQ(*second, StoreOutcome::kDuplicate);

  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  ASSERT_EQ(returns->size(), 1u);
  EXPECT_EQ((*returns)[0].ret, wire::Value("first"));
  EXPECT_EQ((*returns)[0].retcode, 0);
}

TEST_P(JobCacheContractTest, ConcurrentReturnsAreAllStoredOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;
  const std::string jids[] = {"20250101120000000001", "20250101120000000002"};
  ASSERT_TRUE(cache_->SaveJob({jids[0], PublishLoad(jids[0]), {}}).ok());
  OutcomeTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string minion = Id("m", t, i);
        cache_->StoreReturn(MakeReturn(jids[i % 2], minion, wire::Value(t * 1000 + i), 0),
                            tally.Callback());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(tally.WaitFor(kThreads * kPerThread)) << tally.total() << " callbacks";
  EXPECT_EQ(tally.stored(), static_cast<std::size_t>(kThreads * kPerThread)) << tally.last_error();
  EXPECT_EQ(tally.duplicates(), 0u);
  EXPECT_EQ(tally.errors(), 0u);

  std::set<std::string> seen;
  for (const std::string& jid : jids) {
    auto returns = cache_->LoadReturns(jid);
    ASSERT_TRUE(returns.ok()) << returns.error().ToString();
    for (const JobReturn& ret : *returns) {
      EXPECT_TRUE(seen.insert(ret.minion_id).second) << ret.minion_id;
      const int t = std::stoi(ret.minion_id.substr(1));
      const int i = std::stoi(ret.minion_id.substr(ret.minion_id.find('-') + 1));
      EXPECT_EQ(ret.jid, jids[i % 2]);
      EXPECT_EQ(ret.ret, wire::Value(t * 1000 + i));
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kPerThread));
}

TEST_P(JobCacheContractTest, RacingDuplicatesStoreEachReturnOnce) {
  constexpr int kThreads = 4;
  constexpr int kMinions = 200;
  const std::string jid = "20250101120000000003";
  OutcomeTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kMinions; ++i) {
        cache_->StoreReturn(MakeReturn(jid, Id("m", i), wire::Value(t)), tally.Callback());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(tally.WaitFor(kThreads * kMinions));
  EXPECT_EQ(tally.errors(), 0u) << tally.last_error();
  EXPECT_EQ(tally.stored(), static_cast<std::size_t>(kMinions));
  EXPECT_EQ(tally.duplicates(), static_cast<std::size_t>((kThreads - 1) * kMinions));
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), static_cast<std::size_t>(kMinions));
}

TEST_P(JobCacheContractTest, ReturnsForAnUnsavedJidAreKept) {
  const std::string jid = "20250101120000123462";
  auto stored = StoreAndWait(*cache_, MakeReturn(jid, "web1", wire::Value("pong")));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(*stored, StoreOutcome::kStored);
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  ASSERT_EQ(returns->size(), 1u);
  EXPECT_EQ((*returns)[0].ret, wire::Value("pong"));
  auto job = cache_->LoadJob(jid);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kNotFound);
}

TEST_P(JobCacheContractTest, ListJobsSummarizesSavedJobs) {
  const std::string late = "20250302101112654321";
  const std::string early = "20250101120000123456";
  wire::Value list_load = wire::Value::MapOf(
      {{"fun", wire::Value("cmd.run")},
       {"arg", wire::Value(wire::Array{wire::Value("uptime")})},
       {"tgt", wire::Value(wire::Array{wire::Value("web1"), wire::Value("web2")})},
       {"tgt_type", wire::Value("list")},
       {"jid", wire::Value(late)}});
  ASSERT_TRUE(cache_->SaveJob({late, list_load, {"web1", "web2"}}).ok());
  ASSERT_TRUE(cache_->SaveJob({early, PublishLoad(early), {"web1"}}).ok());
  // A return alone does not make a listed job.
  ASSERT_TRUE(
      StoreAndWait(*cache_, MakeReturn("20250101000000000009", "web1", wire::Value(1))).ok());

  auto jobs = cache_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  const JobSummary& first = (*jobs)[0];
  EXPECT_EQ(first.jid, early);
  EXPECT_EQ(first.function, "test.ping");
  EXPECT_EQ(first.arguments, wire::Value(wire::Array{wire::Value("a1"), wire::Value(2)}));
  EXPECT_EQ(first.target, "web*");
  EXPECT_EQ(first.target_type, "glob");
  EXPECT_EQ(first.user, "alice");
  EXPECT_EQ(first.start_time, "2025, Jan 01 12:00:00.123456");
  const JobSummary& second = (*jobs)[1];
  EXPECT_EQ(second.jid, late);
  EXPECT_EQ(second.function, "cmd.run");
  // A list target stays a list, as salt-run 3007.8 lists it.
  EXPECT_EQ(second.target, wire::Value(wire::Array{"web1", "web2"}));
  EXPECT_EQ(second.target_type, "list");
  EXPECT_EQ(second.user, "root");  // Salt's default
  EXPECT_EQ(second.start_time, "2025, Mar 02 10:11:12.654321");
}

// How a master of a cluster notices a job no peer could forward to it (a cut peer link):
// every backend lists the jobs saved since a jid, in jid order, at most `limit`.
TEST_P(JobCacheContractTest, JidsSinceListsRecentlySavedJobsInJidOrder) {
  const auto now = std::chrono::system_clock::now();
  const std::string older = GenerateJid(now - std::chrono::seconds(3));
  const std::string first = GenerateJid(now - std::chrono::seconds(2));
  const std::string second = GenerateJid(now - std::chrono::seconds(1));
  ASSERT_TRUE(cache_->SaveJob({second, PublishLoad(second), {"web1"}}).ok());
  ASSERT_TRUE(cache_->SaveJob({older, PublishLoad(older), {"web1"}}).ok());
  ASSERT_TRUE(cache_->SaveJob({first, PublishLoad(first), {"web1"}}).ok());
  // A return alone (a minion's own jid) is no job to publish.
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(GenerateJid(now), "web1", wire::Value(1))).ok());
  auto since = cache_->JidsSince(first, 10);
  ASSERT_TRUE(since.ok()) << since.error().ToString();
  EXPECT_EQ(*since, (std::vector<std::string>{first, second}));
  EXPECT_EQ(*cache_->JidsSince(first, 1), std::vector<std::string>{first});
  EXPECT_TRUE(cache_->JidsSince(GenerateJid(now + std::chrono::seconds(5)), 10)->empty());
}

TEST_P(JobCacheContractTest, CleanOldRemovesOldJobsAndKeepsNew) {
  const std::string saved = "20250101120000123463";
  const std::string returned = "20250101120000123464";
  ASSERT_TRUE(cache_->SaveJob({saved, PublishLoad(saved), {"web1"}}).ok());
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(saved, "web1", wire::Value(1))).ok());
  ASSERT_TRUE(StoreAndWait(*cache_, MakeReturn(returned, "web1", wire::Value(2))).ok());
  const auto now = std::chrono::system_clock::now();

  auto removed = cache_->CleanOld(0s, now + 24h * 365);  // 0 disables cleanup
  ASSERT_TRUE(removed.ok()) << removed.error().ToString();
  EXPECT_EQ(*removed, 0u);
  removed = cache_->CleanOld(1h, now + 30min);  // younger than an hour: kept
  ASSERT_TRUE(removed.ok()) << removed.error().ToString();
  EXPECT_EQ(*removed, 0u);
  EXPECT_TRUE(cache_->LoadJob(saved).ok());
  EXPECT_TRUE(cache_->LoadReturns(returned).ok());

  removed = cache_->CleanOld(1h, now + 2h);  // older than an hour: removed
  ASSERT_TRUE(removed.ok()) << removed.error().ToString();
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(cache_->LoadJob(saved).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(cache_->LoadReturns(saved).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(cache_->LoadReturns(returned).error().code, ErrorCode::kNotFound);
  auto jobs = cache_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  EXPECT_TRUE(jobs->empty());

  // A job stored after a cleanup is stored again (no stale state about removed jobs).
  auto again = StoreAndWait(*cache_, MakeReturn(saved, "web1", wire::Value(3)));
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(*again, StoreOutcome::kStored);
  EXPECT_EQ(cache_->LoadReturns(saved)->size(), 1u);
}

TEST_P(JobCacheContractTest, CheckSucceeds) {
  Status status = cache_->Check();
  EXPECT_TRUE(status.ok()) << status.error().ToString();
  status = cache_->Check();
  EXPECT_TRUE(status.ok()) << status.error().ToString();
}

TEST_P(JobCacheContractTest, ShutdownRunsPendingCallbacks) {
  constexpr int kReturns = 500;
  const std::string jid = "20250101120000123465";
  OutcomeTally tally;
  for (int i = 0; i < kReturns; ++i) {
    cache_->StoreReturn(MakeReturn(jid, Id("m", i), wire::Value(i)), tally.Callback());
  }
  cache_->Shutdown();
  EXPECT_EQ(tally.total(), static_cast<std::size_t>(kReturns));  // no waiting: Shutdown drains
  EXPECT_EQ(tally.stored(), static_cast<std::size_t>(kReturns)) << tally.last_error();

  auto late = StoreAndWait(*cache_, MakeReturn(jid, "late", wire::Value(0)));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kFailedPrecondition);
  cache_->Shutdown();  // idempotent
  auto returns = cache_->LoadReturns(jid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), static_cast<std::size_t>(kReturns));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, JobCacheContractTest,
                         ::testing::ValuesIn(AvailableJobCaches()),
                         [](const ::testing::TestParamInfo<JobCacheUnderTest>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace halite::jobs
