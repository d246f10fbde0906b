// PostgresJobCache beyond the shared contract: a server that goes away, crashes, hangs or holds
// a newer schema; masters sharing one schema; options. Every test drives a real server.
#include "halite/jobs/postgres_job_cache.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "job_cache_testing.h"
#include "pg_server.h"
#include "postgres_testing.h"

namespace halite::jobs {
namespace {

using testing::Id;
using testing::MakeReturn;
using testing::OutcomeTally;
using testing::StoreAndWait;
using namespace std::chrono_literals;

constexpr std::string_view kJid = "20261129120000000001";

// Runs one SQL statement outside the cache (as an operator would), CHECK-failing on error.
void RunSql(const std::string& dsn, const std::string& sql) {
  PGconn* conn = PQconnectdb(dsn.c_str());
  HALITE_CHECK(PQstatus(conn) == CONNECTION_OK) << PQerrorMessage(conn);
  PGresult* result = PQexec(conn, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  HALITE_CHECK(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
      << PQresultErrorMessage(result);
  PQclear(result);
  PQfinish(conn);
}

// These tests take their server away, so each has a server of its own.
class PostgresJobCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = testing::StartPgServer(); }

  PostgresJobCacheOptions Options() {
    PostgresJobCacheOptions options = testing::PgOptions(server_->dsn());
    options.connect_timeout = 2s;
    options.operation_timeout = 2s;
    options.retry_for = 0s;  // failures are reported at once unless a test says otherwise
    return options;
  }

  std::unique_ptr<halite::testing::PgServer> server_;
};

TEST_F(PostgresJobCacheTest, ReturnsAreRefusedWhileTheServerIsDownAndStoredAfter) {
  auto cache = testing::OpenPg(Options());
  auto first = StoreAndWait(*cache, MakeReturn(std::string(kJid), "web1", wire::Value(1)));
  ASSERT_TRUE(first.ok()) << first.error().ToString();

  ASSERT_TRUE(server_->Stop().ok());
  auto refused = StoreAndWait(*cache, MakeReturn(std::string(kJid), "web2", wire::Value(2)));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().ToString();
  EXPECT_FALSE(cache->Check().ok());
  auto unreadable = cache->LoadReturns(kJid);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.error().code, ErrorCode::kNotFound);

  ASSERT_TRUE(server_->Start().ok());
  // The minion sends again: stored now, and nothing acknowledged before was lost.
  auto resent = StoreAndWait(*cache, MakeReturn(std::string(kJid), "web2", wire::Value(2)));
  ASSERT_TRUE(resent.ok()) << resent.error().ToString();
  EXPECT_EQ(*resent, StoreOutcome::kStored);
  Status health = cache->Check();
  EXPECT_TRUE(health.ok()) << health.error().ToString();
  auto returns = cache->LoadReturns(kJid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  ASSERT_EQ(returns->size(), 2u);
  EXPECT_EQ((*returns)[0].ret, wire::Value(1));
  EXPECT_EQ((*returns)[1].ret, wire::Value(2));
}

TEST_F(PostgresJobCacheTest, ReturnsWaitForTheServerWithinRetryFor) {
  PostgresJobCacheOptions options = Options();
  options.retry_for = 120s;
  auto cache = testing::OpenPg(options);
  ASSERT_TRUE(StoreAndWait(*cache, MakeReturn(std::string(kJid), "web0", wire::Value(0))).ok());
  ASSERT_TRUE(server_->Stop().ok());
  OutcomeTally tally;
  cache->StoreReturn(MakeReturn(std::string(kJid), "web1", wire::Value(1)), tally.Callback());
  // The write was tried and failed, and the return still waits (no callback yet).
  ASSERT_TRUE(
      ::halite::jobs::testing::WaitUntil([&] { return cache->Stats().failed_writes >= 2; }));
  EXPECT_EQ(tally.total(), 0u);
  EXPECT_EQ(cache->Stats().waiting, 1u);
  ASSERT_TRUE(server_->Start().ok());
  ASSERT_TRUE(tally.WaitFor(1));
  EXPECT_EQ(tally.stored(), 1u) << tally.last_error();
  auto returns = cache->LoadReturns(kJid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), 2u);
}

TEST_F(PostgresJobCacheTest, ShutdownDoesNotWaitOutRetryFor) {
  PostgresJobCacheOptions options = Options();
  options.retry_for = 600s;
  auto cache = testing::OpenPg(options);
  ASSERT_TRUE(server_->Stop().ok());
  OutcomeTally tally;
  for (int i = 0; i < 50; ++i) {
    cache->StoreReturn(MakeReturn(std::string(kJid), Id("m", i), wire::Value(i)), tally.Callback());
  }
  ASSERT_TRUE(
      ::halite::jobs::testing::WaitUntil([&] { return cache->Stats().failed_writes >= 1; }));
  cache->Shutdown();  // returns once every callback has run: no 600 s wait
  EXPECT_EQ(tally.total(), 50u);
  EXPECT_EQ(tally.errors(), 50u);
}

TEST_F(PostgresJobCacheTest, AcknowledgedReturnsSurviveAServerCrash) {
  auto cache = testing::OpenPg(Options());
  constexpr int kReturns = 300;
  OutcomeTally tally;
  for (int i = 0; i < kReturns; ++i) {
    cache->StoreReturn(MakeReturn(std::string(kJid), Id("m", i), wire::Value(i)), tally.Callback());
  }
  ASSERT_TRUE(tally.WaitFor(kReturns));
  ASSERT_EQ(tally.stored(), static_cast<std::size_t>(kReturns)) << tally.last_error();
  // Immediate shutdown: no checkpoint; what was acknowledged must come back from the WAL.
  ASSERT_TRUE(server_->Crash().ok());
  ASSERT_TRUE(server_->Start().ok());
  auto returns = cache->LoadReturns(kJid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), static_cast<std::size_t>(kReturns));
}

TEST_F(PostgresJobCacheTest, AHungServerCostsATimeoutNotAHang) {
  auto cache = testing::OpenPg(Options());
  ASSERT_TRUE(cache->Check().ok());
  // The writer's connection is up before the server stops answering on it.
  ASSERT_TRUE(StoreAndWait(*cache, MakeReturn(std::string(kJid), "web0", wire::Value(0))).ok());
  server_->Freeze();
  auto stuck = StoreAndWait(*cache, MakeReturn(std::string(kJid), "web1", wire::Value(1)), 30s);
  ASSERT_FALSE(stuck.ok());
  EXPECT_TRUE(stuck.error().code == ErrorCode::kDeadlineExceeded ||
              stuck.error().code == ErrorCode::kUnavailable)
      << stuck.error().ToString();
  Status health = cache->Check();
  EXPECT_FALSE(health.ok());
  server_->Thaw();
  auto stored = StoreAndWait(*cache, MakeReturn(std::string(kJid), "web1", wire::Value(1)));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_TRUE(cache->Check().ok());
}

TEST_F(PostgresJobCacheTest, OpenSucceedsWithTheServerDownAndCatchesUp) {
  ASSERT_TRUE(server_->Stop().ok());
  auto cache = PostgresJobCache::Open(Options());
  ASSERT_TRUE(cache.ok()) << cache.error().ToString();
  EXPECT_FALSE((*cache)->Check().ok());
  auto refused = StoreAndWait(**cache, MakeReturn(std::string(kJid), "web1", wire::Value(1)));
  EXPECT_FALSE(refused.ok());
  ASSERT_TRUE(server_->Start().ok());
  Status health = (*cache)->Check();  // makes the schema on first use
  ASSERT_TRUE(health.ok()) << health.error().ToString();
  ASSERT_TRUE(
      (*cache)
          ->SaveJob({std::string(kJid), wire::Value::MapOf({{"fun", "test.ping"}}), {"web1"}})
          .ok());
  auto stored = StoreAndWait(**cache, MakeReturn(std::string(kJid), "web1", wire::Value(1)));
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(*stored, StoreOutcome::kStored);
}

TEST_F(PostgresJobCacheTest, ANewerSchemaStopsOpen) {
  PostgresJobCacheOptions options = Options();
  testing::OpenPg(options).reset();
  RunSql(server_->dsn(), "UPDATE \"" + options.schema + "\".schema_version SET version = 99");
  auto cache = PostgresJobCache::Open(options);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(cache.error().message.find("version 99"), std::string::npos) << cache.error().message;
}

TEST_F(PostgresJobCacheTest, MastersStartingTogetherMigrateOnce) {
  const PostgresJobCacheOptions options = Options();
  constexpr int kMasters = 4;
  std::vector<Result<std::unique_ptr<PostgresJobCache>>> opened;
  opened.reserve(kMasters);
  for (int i = 0; i < kMasters; ++i) opened.emplace_back(Error::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kMasters; ++i) {
    threads.emplace_back([&, i] {
      PostgresJobCacheOptions mine = options;
      mine.master_id = "127.0.0." + std::to_string(2 + i);
      opened[static_cast<std::size_t>(i)] = PostgresJobCache::Open(mine);
    });
  }
  for (std::thread& t : threads) t.join();
  for (auto& cache : opened) {
    ASSERT_TRUE(cache.ok()) << cache.error().ToString();
    Status health = (*cache)->Check();
    EXPECT_TRUE(health.ok()) << health.error().ToString();
  }
}

TEST_F(PostgresJobCacheTest, TwoMastersOnOneSchemaStoreEachReturnOnce) {
  PostgresJobCacheOptions a = Options();
  PostgresJobCacheOptions b = a;
  b.master_id = "127.0.0.3";
  auto first = testing::OpenPg(a);
  auto second = testing::OpenPg(b);
  ASSERT_TRUE(
      first->SaveJob({std::string(kJid), wire::Value::MapOf({{"fun", "test.ping"}}), {"m0", "m1"}})
          .ok());
  ASSERT_TRUE(
      second->SaveJob({std::string(kJid), wire::Value::MapOf({{"fun", "test.ping"}}), {"m1", "m2"}})
          .ok());
  constexpr int kMinions = 400;
  OutcomeTally tally;
  std::thread t1([&] {
    for (int i = 0; i < kMinions; ++i) {
      first->StoreReturn(MakeReturn(std::string(kJid), Id("m", i), wire::Value(1)),
                         tally.Callback());
    }
  });
  std::thread t2([&] {
    for (int i = kMinions - 1; i >= 0; --i) {
      second->StoreReturn(MakeReturn(std::string(kJid), Id("m", i), wire::Value(2)),
                          tally.Callback());
    }
  });
  t1.join();
  t2.join();
  ASSERT_TRUE(tally.WaitFor(2 * kMinions));
  EXPECT_EQ(tally.errors(), 0u) << tally.last_error();
  EXPECT_EQ(tally.stored(), static_cast<std::size_t>(kMinions));
  EXPECT_EQ(tally.duplicates(), static_cast<std::size_t>(kMinions));
  for (PostgresJobCache* cache : {first.get(), second.get()}) {
    auto returns = cache->LoadReturns(kJid);
    ASSERT_TRUE(returns.ok()) << returns.error().ToString();
    EXPECT_EQ(returns->size(), static_cast<std::size_t>(kMinions));
    auto job = cache->LoadJob(kJid);
    ASSERT_TRUE(job.ok()) << job.error().ToString();
    EXPECT_EQ(job->minions, (std::vector<std::string>{"m0", "m1", "m2"}));
  }
}

TEST_F(PostgresJobCacheTest, TextThatIsNotUtf8IsRefusedAlone) {
  auto cache = testing::OpenPg(Options());
  OutcomeTally tally;
  cache->StoreReturn(MakeReturn(std::string(kJid), "good1", wire::Value(1)), tally.Callback());
  cache->StoreReturn(MakeReturn(std::string(kJid), std::string("bad\xff", 4), wire::Value(2)),
                     tally.Callback());
  cache->StoreReturn(MakeReturn(std::string(kJid), std::string("nul\0x", 5), wire::Value(3)),
                     tally.Callback());
  cache->StoreReturn(MakeReturn(std::string(kJid), "good2", wire::Value(4)), tally.Callback());
  ASSERT_TRUE(tally.WaitFor(4));
  EXPECT_EQ(tally.stored(), 2u);
  EXPECT_EQ(tally.errors(), 2u);
  auto returns = cache->LoadReturns(kJid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), 2u);
}

TEST_F(PostgresJobCacheTest, BatchesLargerThanBatchMaxAreAllStored) {
  PostgresJobCacheOptions options = Options();
  options.batch_max = 7;
  options.batch_max_bytes = 4096;
  auto cache = testing::OpenPg(options);
  constexpr int kReturns = 500;
  OutcomeTally tally;
  const std::string blob(300, 'x');
  for (int i = 0; i < kReturns; ++i) {
    cache->StoreReturn(MakeReturn(std::string(kJid), Id("m", i), wire::Value(blob)),
                       tally.Callback());
  }
  ASSERT_TRUE(tally.WaitFor(kReturns));
  EXPECT_EQ(tally.stored(), static_cast<std::size_t>(kReturns)) << tally.last_error();
  auto returns = cache->LoadReturns(kJid);
  ASSERT_TRUE(returns.ok()) << returns.error().ToString();
  EXPECT_EQ(returns->size(), static_cast<std::size_t>(kReturns));
}

TEST_F(PostgresJobCacheTest, WrongCredentialsStopOpen) {
  PostgresJobCacheOptions options = Options();
  options.dsn = server_->dsn() + " user=nobody_here";
  auto cache = PostgresJobCache::Open(options);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kPermissionDenied) << cache.error().ToString();
}

TEST(PostgresJobCacheOptionsTest, ParsesEveryKey) {
  YAML::Node node = YAML::Load(
      "{dsn: 'host=127.0.0.1 dbname=salt', schema: jobs_a, batch_max: 50, pool_size: 3,"
      " connect_timeout_ms: 1500, operation_timeout_ms: 9000, clean_chunk: 20}");
  auto options = ParsePostgresJobCacheOptions({"/tmp/x", "127.0.0.2"}, node);
  ASSERT_TRUE(options.ok()) << options.error().ToString();
  EXPECT_EQ(options->dsn, "host=127.0.0.1 dbname=salt");
  EXPECT_EQ(options->schema, "jobs_a");
  EXPECT_EQ(options->master_id, "127.0.0.2");
  EXPECT_EQ(options->batch_max, 50u);
  EXPECT_EQ(options->pool_size, 3u);
  EXPECT_EQ(options->connect_timeout, 1500ms);
  EXPECT_EQ(options->operation_timeout, 9000ms);
  EXPECT_EQ(options->clean_chunk, 20u);
}

TEST(PostgresJobCacheOptionsTest, ListsEveryProblem) {
  YAML::Node node = YAML::Load("{batch_max: 0, pool_size: many, colour: blue}");
  auto options = ParsePostgresJobCacheOptions({"/tmp/x", "m"}, node);
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().code, ErrorCode::kInvalidArgument);
  for (const char* part : {"job_cache.batch_max", "job_cache.pool_size",
                           "job_cache.colour: unknown key", "job_cache.dsn"}) {
    EXPECT_NE(options.error().message.find(part), std::string::npos)
        << part << " in " << options.error().message;
  }
  auto missing = ParsePostgresJobCacheOptions({"/tmp/x", "m"}, YAML::Node());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("dsn"), std::string::npos);
}

TEST(PostgresJobCacheOptionsTest, OpenRefusesABadSchemaName) {
  PostgresJobCacheOptions options;
  options.dsn = "host=127.0.0.1";
  options.schema = "Robert'); DROP TABLE jobs;--";
  auto cache = PostgresJobCache::Open(options);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace halite::jobs
