// PostgresJobCache: the JobCache for sites that keep job history in PostgreSQL, shared by every
// master of a cluster (master_job_cache: postgres). Schema (tables in `schema`, version 1):
//   jobs(jid PK, load bytea, fun, master_id, created)        one row per published job
//   job_minions(jid, minion_id; PK both)                     expected minions
//   returns(jid, minion_id PK both, ret bytea, retcode, success, out, fun, master_id, stored)
//   masters(master_id PK, seen)                              written by Check (health)
//   schema_version(version)                                  migrations (pg_schema.h)
// `load` and `ret` are msgpack (bin type), so every value round-trips exactly; ids are text with
// COLLATE "C" (byte order, as the file backend sorts). lookup_jid, list_jobs and the CLI's
// reconciliation are each one query on a primary key.
//
// Writes: StoreReturn is group-committed by one writer thread ("jobs-pg-writer") on its own
// connection: everything queued (up to batch_max) goes in one INSERT ... SELECT unnest(...)
// ON CONFLICT DO NOTHING RETURNING, committed before any callback runs; rows not returned were
// stored before (kDuplicate). When the server cannot be reached the batch fails (callbacks get
// Unavailable; the master does not acknowledge and minions resend) and the next batch
// reconnects. Every call is bounded by operation_timeout; nothing waits forever on a server.
// Reads, SaveJob, CleanOld and Check use a small pool of connections.
//
// Start-up: Open connects and migrates the schema. When the server is down at start, Open still
// succeeds (the master must keep serving); the schema is made on first use and Check reports
// the store down until then. A schema newer than this code is an error.
//
// Thread-safe (JobCache contract). Threads: "jobs-pg-writer".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/jobs/job_cache.h"
#include "halite/jobs/job_cache_registry.h"

namespace halite::jobs {

class PgConnection;
class PgPool;
class PgSchema;

struct PostgresJobCacheOptions {
  std::string dsn;                // libpq connection string or URI (required)
  std::string schema = "halite";  // [a-z_][a-z0-9_]*, at most 63 bytes
  std::string master_id;          // recorded with each job and return
  std::size_t batch_max = 1000;   // returns committed together, at most
  std::size_t batch_max_bytes = 32u << 20;
  std::size_t pool_size = 4;  // connections for reads, SaveJob, CleanOld and Check
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds operation_timeout{30000};
  std::size_t clean_chunk = 1000;  // jobs removed per CleanOld transaction (short locks)
  // Returns waiting for the writer, in bytes; beyond it StoreReturn fails at once
  // (ResourceExhausted) instead of growing without bound while the server is slow.
  std::size_t queue_max_bytes = 256u << 20;
  // A return that cannot be written because the server is unreachable stays queued and is
  // tried again (backing off to every 5 s) until it has waited this long; only then does its
  // callback report the error. 0: report at once. The master acknowledges nothing meanwhile,
  // and a minion's own resends are answered as duplicates once the first copy lands.
  std::chrono::milliseconds retry_for{300'000};
};

struct PostgresJobCacheStats {
  std::uint64_t failed_writes = 0;  // batches that could not be written
  std::size_t waiting = 0;          // returns not answered yet: queued, or in a write
};

class PostgresJobCache final : public JobCache {
 public:
  // InvalidArgument for bad options or a malformed dsn; PermissionDenied / FailedPrecondition
  // when the server refuses the login or holds a newer schema. A server that cannot be reached
  // is not an error here (see the file comment).
  static Result<std::unique_ptr<PostgresJobCache>> Open(const PostgresJobCacheOptions& options);

  ~PostgresJobCache() override;
  PostgresJobCache(const PostgresJobCache&) = delete;
  PostgresJobCache& operator=(const PostgresJobCache&) = delete;

  // JobCache:
  Status SaveJob(const Job& job) override;
  Result<Job> LoadJob(std::string_view jid) override;
  void StoreReturn(JobReturn ret, StoreCallback done) override;
  Result<std::vector<JobReturn>> LoadReturns(std::string_view jid) override;
  Result<std::vector<JobSummary>> ListJobs() override;
  Result<std::vector<std::string>> JidsSince(std::string_view since, std::size_t limit) override;
  // Jobs whose row was created more than `keep` before `now` (the master's clock, as recorded
  // at SaveJob), with their minions and returns; then returns of never-saved jobs stored before
  // that. Counts jids. Works in chunks of clean_chunk, one short transaction each.
  using JobCache::CleanOld;
  Result<std::size_t> CleanOld(std::chrono::seconds keep,
                               std::chrono::system_clock::time_point now) override;
  // Writes this master's row in `masters` and reads it back.
  Status Check() override;
  void Shutdown() override;

  // Thread-safe snapshot, for metrics and tests.
  PostgresJobCacheStats Stats();

 private:
  struct Pending {
    JobReturn ret;
    std::string packed;  // msgpack of ret.ret
    StoreCallback done;
    std::chrono::steady_clock::time_point queued;
  };
  explicit PostgresJobCache(const PostgresJobCacheOptions& options);

  std::chrono::steady_clock::time_point Deadline() const {
    return std::chrono::steady_clock::now() + options_.operation_timeout;
  }
  // Runs `body(connection)` on a pooled connection with the schema in place; once more on a
  // new connection when a pooled one turns out to have died while idle.
  template <typename T, typename F>
  Result<T> WithConnection(F&& body);
  // Creates or migrates the schema once per process (and again after a failure).
  Status EnsureSchema(PgConnection& conn);
  std::string Table(std::string_view name) const;  // "schema".name

  void WriterMain();
  void WriteBatch(std::deque<Pending>& batch);
  Status ConnectWriter();  // a new writer_conn_ (writer thread)
  // Writer thread: runs the callbacks with `error`, or puts the returns back at the head of
  // the queue when the server is unreachable and they have waited less than retry_for.
  void FailOrHold(std::deque<Pending>& batch, const Error& error);
  static std::size_t QueuedBytes(const Pending& p);

  const PostgresJobCacheOptions options_;
  std::unique_ptr<PgSchema> schema_;
  std::unique_ptr<PgPool> pool_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_ HALITE_GUARDED_BY(mu_);
  std::size_t queued_bytes_ HALITE_GUARDED_BY(mu_) = 0;
  std::size_t writing_ HALITE_GUARDED_BY(mu_) = 0;  // taken off queue_ by the writer
  bool stopping_ HALITE_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point retry_after_ HALITE_GUARDED_BY(mu_);
  std::chrono::milliseconds retry_backoff_ HALITE_GUARDED_BY(mu_){0};
  std::atomic<std::uint64_t> failed_writes_{0};

  // Writer thread only.
  std::unique_ptr<PgConnection> writer_conn_;
  // The last batch could not reach the server (log on change). Read by WriterMain under mu_
  // only as a hint for shutdown; written by the writer thread alone.
  std::atomic<bool> writer_down_{false};

  std::mutex shutdown_mu_;
  std::thread writer_;
};

// postgres_job_cache_factory.cc: the YAML side. Keys: dsn (required), schema, batch_max
// (1..100000), pool_size (1..64), connect_timeout_ms, operation_timeout_ms (100..600000),
// retry_for_seconds (0..86400), clean_chunk (1..100000). InvalidArgument lists every problem
// (unknown keys included).
Result<PostgresJobCacheOptions> ParsePostgresJobCacheOptions(const JobCacheContext& context,
                                                             const YAML::Node& options);
Result<std::unique_ptr<JobCache>> CreatePostgresJobCache(const JobCacheContext& context,
                                                         const YAML::Node& options);

}  // namespace halite::jobs
