#include "halite/jobs/postgres_job_cache.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "halite/jobs/job_summary.h"
#include "halite/jobs/pg_connection.h"
#include "halite/jobs/pg_schema.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {
namespace {

constexpr unsigned kTextOid = 25;

}  // namespace

Result<std::unique_ptr<PostgresJobCache>> PostgresJobCache::Open(
    const PostgresJobCacheOptions& options) {
  if (options.dsn.empty()) return Error::InvalidArgument("postgres: dsn is empty");
  if (!ValidPgSchemaName(options.schema)) {
    return Error::InvalidArgument("postgres: schema '" + options.schema +
                                  "' must match [a-z_][a-z0-9_]* (at most 63 bytes)");
  }
  if (options.batch_max == 0 || options.pool_size == 0 || options.clean_chunk == 0) {
    return Error::InvalidArgument("postgres: batch_max, pool_size and clean_chunk must be > 0");
  }
  if (!ValidPgText(options.master_id)) {
    return Error::InvalidArgument("postgres: the master id is not valid UTF-8 text");
  }
  std::unique_ptr<PostgresJobCache> cache(new PostgresJobCache(options));
  // Reach the server once now, so that a wrong dsn, password or schema stops start-up.
  auto lease = cache->pool_->Acquire(cache->Deadline());
  Status ready = lease.ok() ? cache->EnsureSchema(**lease) : Status(lease.error());
  if (!ready.ok()) {
    const ErrorCode code = ready.error().code;
    if (code != ErrorCode::kUnavailable && code != ErrorCode::kDeadlineExceeded) {
      return ready.error();
    }
    spdlog::warn(
        "job cache: PostgreSQL cannot be reached now ({}); starting anyway, returns are "
        "refused until it can",
        ready.error().ToString());
  }
  return cache;
}

PostgresJobCache::PostgresJobCache(const PostgresJobCacheOptions& options)
    : options_(options),
      schema_(std::make_unique<PgSchema>(options.schema)),
      pool_(std::make_unique<PgPool>(options.dsn, options.pool_size, options.connect_timeout)) {
  writer_ = std::thread([this] { WriterMain(); });
  pthread_setname_np(writer_.native_handle(), "jobs-pg-writer");
}

PostgresJobCache::~PostgresJobCache() { Shutdown(); }

void PostgresJobCache::Shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string PostgresJobCache::Table(std::string_view name) const { return schema_->Table(name); }

template <typename T, typename F>
Result<T> PostgresJobCache::WithConnection(F&& body) {
  return pool_->Run<T>(Deadline(), [&](PgConnection& conn) -> Result<T> {
    HALITE_RETURN_IF_ERROR(EnsureSchema(conn));
    return body(conn);
  });
}

Status PostgresJobCache::EnsureSchema(PgConnection& conn) {
  return schema_->Ensure(conn, Deadline());
}

Status PostgresJobCache::SaveJob(const Job& job) {
  if (job.jid.empty()) return Error::InvalidArgument("job without a jid");
  if (!ValidPgText(job.jid)) return Error::InvalidArgument("job: the jid is not valid text");
  if (!job.load.is_map()) return Error::InvalidArgument("job " + job.jid + ": load is not a map");
  wire::Value load = job.load;
  load.Erase("key");  // the master's root key never reaches the store
  if (load.Find("jid") == nullptr) load.Set("jid", wire::Value(job.jid));
  // Sorted and unique, so that masters saving overlapping lists lock rows in the same order.
  std::set<std::string_view> sorted;
  for (const std::string& minion : job.minions) {
    if (!ValidPgText(minion)) {
      return Error::InvalidArgument("job " + job.jid + ": a minion id is not valid text");
    }
    sorted.insert(minion);
  }
  std::vector<std::string_view> minions(sorted.begin(), sorted.end());
  const std::string* fun = load.FindStr("fun");
  PgParams params;
  params.Text(job.jid).Bytes(wire::Pack(load, wire::Packing::kBinType));
  if (fun != nullptr && ValidPgText(*fun)) {
    params.Text(*fun);
  } else {
    params.Null(kTextOid);
  }
  params.Text(options_.master_id).Timestamp(std::chrono::system_clock::now()).TextArray(minions);
  const std::string sql =
      "WITH saved AS (INSERT INTO " + Table("jobs") +
      " (jid, load, fun, master_id, created) VALUES ($1, $2, $3, $4, $5)"
      " ON CONFLICT (jid) DO UPDATE SET load = EXCLUDED.load, fun = EXCLUDED.fun)"
      " INSERT INTO " +
      Table("job_minions") +
      " (jid, minion_id) SELECT $1, m FROM unnest($6::text[]) AS m ON CONFLICT DO NOTHING";
  return WithConnection<void>([&](PgConnection& conn) -> Status {
    for (int attempt = 0;; ++attempt) {
      auto done = conn.Exec(sql, params, Deadline());
      if (done.ok()) return OkStatus();
      const std::string_view state = SqlStateOf(done.error());
      if (attempt < 2 && (state == "40P01" || state == "40001") && !conn.broken()) continue;
      return done.error().WithContext("save job " + job.jid);
    }
  });
}

Result<Job> PostgresJobCache::LoadJob(std::string_view jid) {
  if (jid.empty() || !ValidPgText(jid)) return Error::NotFound("no job " + std::string(jid));
  return WithConnection<Job>([&](PgConnection& conn) -> Result<Job> {
    HALITE_ASSIGN_OR_RETURN(
        PgResult result,
        conn.Exec("SELECT j.load, ARRAY(SELECT m.minion_id FROM " + Table("job_minions") +
                      " m WHERE m.jid = j.jid ORDER BY m.minion_id) FROM " + Table("jobs") +
                      " j WHERE j.jid = $1",
                  PgParams().Text(jid), Deadline()));
    if (result.rows() == 0) return Error::NotFound("no job " + std::string(jid));
    Result<wire::Value> load = wire::Unpack(result.Bytes(0, 0));
    if (!load.ok() || !load->is_map()) {
      return Error::DataLoss("job " + std::string(jid) + ": the stored load does not decode");
    }
    // Byte order already: ORDER BY on a COLLATE "C" column.
    HALITE_ASSIGN_OR_RETURN(std::vector<std::string> minions, result.TextArray(0, 1));
    return Job{std::string(jid), std::move(load).value(), std::move(minions)};
  });
}

Result<std::vector<JobReturn>> PostgresJobCache::LoadReturns(std::string_view jid) {
  if (jid.empty() || !ValidPgText(jid)) return Error::NotFound("no job " + std::string(jid));
  return WithConnection<std::vector<JobReturn>>(
      [&](PgConnection& conn) -> Result<std::vector<JobReturn>> {
        // minion_id is COLLATE "C", so ORDER BY gives the byte order the contract asks for.
        HALITE_ASSIGN_OR_RETURN(
            PgResult result, conn.Exec("SELECT minion_id, ret, retcode, success, out FROM " +
                                           Table("returns") + " WHERE jid = $1 ORDER BY minion_id",
                                       PgParams().Text(jid), Deadline()));
        std::vector<JobReturn> returns;
        returns.reserve(static_cast<std::size_t>(result.rows()));
        for (int row = 0; row < result.rows(); ++row) {
          JobReturn r;
          r.jid = std::string(jid);
          r.minion_id = std::string(result.Bytes(row, 0));
          Result<wire::Value> ret = wire::Unpack(result.Bytes(row, 1));
          if (!ret.ok()) {
            spdlog::warn("job cache: the return of {} for {} does not decode; skipped", r.minion_id,
                         jid);
            continue;
          }
          r.ret = std::move(ret).value();
          if (!result.IsNull(row, 2)) r.retcode = result.Int8(row, 2);
          if (!result.IsNull(row, 3)) r.success = result.Bool(row, 3);
          r.out = std::string(result.Bytes(row, 4));
          returns.push_back(std::move(r));
        }
        if (!returns.empty() || result.rows() > 0) return returns;
        HALITE_ASSIGN_OR_RETURN(PgResult known,
                                conn.Exec("SELECT 1 FROM " + Table("jobs") + " WHERE jid = $1",
                                          PgParams().Text(jid), Deadline()));
        if (known.rows() == 0) return Error::NotFound("no job " + std::string(jid));
        return returns;
      });
}

Result<std::vector<JobSummary>> PostgresJobCache::ListJobs() {
  return WithConnection<std::vector<JobSummary>>(
      [&](PgConnection& conn) -> Result<std::vector<JobSummary>> {
        HALITE_ASSIGN_OR_RETURN(
            PgResult result,
            conn.Exec("SELECT jid, load FROM " + Table("jobs") + " ORDER BY jid", Deadline()));
        std::vector<JobSummary> jobs;
        jobs.reserve(static_cast<std::size_t>(result.rows()));
        for (int row = 0; row < result.rows(); ++row) {
          Result<wire::Value> load = wire::Unpack(result.Bytes(row, 1));
          if (!load.ok() || !load->is_map()) continue;
          jobs.push_back(SummarizeJob(result.Bytes(row, 0), *load));
        }
        return jobs;
      });
}

// The primary key is COLLATE "C", so jid order is byte order is time order: an index range.
Result<std::vector<std::string>> PostgresJobCache::JidsSince(std::string_view since,
                                                             std::size_t limit) {
  if (!ValidPgText(since)) return Error::InvalidArgument("JidsSince: a jid with a NUL byte");
  return WithConnection<std::vector<std::string>>(
      [&](PgConnection& conn) -> Result<std::vector<std::string>> {
        HALITE_ASSIGN_OR_RETURN(
            PgResult result,
            conn.Exec("SELECT jid FROM " + Table("jobs") + " WHERE jid >= $1 ORDER BY jid LIMIT " +
                          std::to_string(limit),
                      PgParams().Text(since), Deadline()));
        std::vector<std::string> jids;
        jids.reserve(static_cast<std::size_t>(result.rows()));
        for (int row = 0; row < result.rows(); ++row) jids.emplace_back(result.Bytes(row, 0));
        return jids;
      });
}

Result<std::size_t> PostgresJobCache::CleanOld(std::chrono::seconds keep,
                                               std::chrono::system_clock::time_point now) {
  if (keep.count() <= 0) return std::size_t{0};
  const auto cutoff = now - keep;
  return WithConnection<std::size_t>([&](PgConnection& conn) -> Result<std::size_t> {
    const auto chunk = static_cast<std::int64_t>(options_.clean_chunk);
    std::size_t removed = 0;
    // Old jobs with their minions and returns, a chunk per transaction. SKIP LOCKED lets two
    // masters clean at once without waiting on each other.
    const std::string jobs_sql =
        "WITH old AS (SELECT jid FROM " + Table("jobs") +
        " WHERE created < $1 ORDER BY created LIMIT $2 FOR UPDATE SKIP LOCKED),"
        " m AS (DELETE FROM " +
        Table("job_minions") +
        " WHERE jid IN (SELECT jid FROM old)),"
        " r AS (DELETE FROM " +
        Table("returns") +
        " WHERE jid IN (SELECT jid FROM old))"
        " DELETE FROM " +
        Table("jobs") + " WHERE jid IN (SELECT jid FROM old)";
    for (;;) {
      HALITE_ASSIGN_OR_RETURN(
          PgResult result,
          conn.Exec(jobs_sql, PgParams().Timestamp(cutoff).Int8(chunk), Deadline()));
      const std::int64_t n = result.Affected();
      removed += static_cast<std::size_t>(n);
      if (n < chunk) break;
    }
    // Returns of jobs that were never saved (or whose row is gone), by their own age.
    const std::string orphans_sql =
        "WITH gone AS (DELETE FROM " + Table("returns") +
        " WHERE ctid = ANY(ARRAY(SELECT r.ctid FROM " + Table("returns") +
        " r WHERE r.stored < $1 AND NOT EXISTS (SELECT 1 FROM " + Table("jobs") +
        " j WHERE j.jid = r.jid) LIMIT $2)) RETURNING jid)"
        " SELECT count(DISTINCT jid)::int8, count(*)::int8 FROM gone";
    for (;;) {
      HALITE_ASSIGN_OR_RETURN(
          PgResult result,
          conn.Exec(orphans_sql, PgParams().Timestamp(cutoff).Int8(chunk), Deadline()));
      if (result.rows() == 0) break;
      removed += static_cast<std::size_t>(result.Int8(0, 0));
      if (result.Int8(0, 1) < chunk) break;
    }
    return removed;
  });
}

Status PostgresJobCache::Check() {
  return WithConnection<void>([&](PgConnection& conn) -> Status {
    HALITE_ASSIGN_OR_RETURN(
        PgResult result,
        conn.Exec("INSERT INTO " + Table("masters") +
                      " (master_id, seen) VALUES ($1, now()) ON CONFLICT (master_id)"
                      " DO UPDATE SET seen = EXCLUDED.seen RETURNING master_id",
                  PgParams().Text(options_.master_id), Deadline()));
    if (result.rows() != 1 || result.Bytes(0, 0) != options_.master_id) {
      return Error::DataLoss("postgres: the health probe did not read back");
    }
    return OkStatus();
  });
}

PostgresJobCacheStats PostgresJobCache::Stats() {
  PostgresJobCacheStats stats;
  stats.failed_writes = failed_writes_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  stats.waiting = queue_.size() + writing_;
  return stats;
}

}  // namespace halite::jobs
