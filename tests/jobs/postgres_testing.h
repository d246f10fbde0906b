// Test helpers for the PostgreSQL backend: the server the tests use (HALITE_TEST_PG_DSN when
// set, else a real server this test process starts on its own loopback address), and a fresh
// schema per cache so that tests never see each other's rows.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "halite/jobs/postgres_job_cache.h"
#include "loopback.h"
#include "pg_server.h"

namespace halite::jobs::testing {

// A server of this process's own (started on first use, stopped at exit).
inline std::unique_ptr<halite::testing::PgServer> StartPgServer(int port = 5432) {
  auto server = halite::testing::PgServer::Create(halite::testing::UniqueLoopbackIp(), port);
  HALITE_CHECK(server.ok()) << "cannot start PostgreSQL for the tests: "
                            << server.error().ToString();
  return std::move(server).value();
}

inline const std::string& SharedPgDsn() {
  static const std::string dsn = [] {
    if (const char* env = std::getenv("HALITE_TEST_PG_DSN"); env != nullptr && *env != '\0') {
      return std::string(env);
    }
    // Its own port: servers of single tests may reuse its address meanwhile.
    static std::unique_ptr<halite::testing::PgServer> server = StartPgServer(5433);
    return server->dsn();
  }();
  return dsn;
}

inline std::string FreshSchema() {
  static std::atomic<unsigned> counter{0};
  return "t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

inline PostgresJobCacheOptions PgOptions(const std::string& dsn, std::string schema = {}) {
  PostgresJobCacheOptions options;
  options.dsn = dsn;
  options.schema = schema.empty() ? FreshSchema() : std::move(schema);
  options.master_id = "127.0.0.2";
  options.connect_timeout = std::chrono::seconds(5);
  options.operation_timeout = std::chrono::seconds(30);
  return options;
}

inline std::unique_ptr<PostgresJobCache> OpenPg(const PostgresJobCacheOptions& options) {
  auto cache = PostgresJobCache::Open(options);
  HALITE_CHECK(cache.ok()) << cache.error().ToString();
  return std::move(cache).value();
}

}  // namespace halite::jobs::testing
