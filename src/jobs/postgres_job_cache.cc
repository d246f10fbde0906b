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
#include "halite/wire/msgpack.h"
#include "pg_connection.h"
#include "postgres_job_cache_internal.h"

namespace halite::jobs {
namespace {

constexpr unsigned kTextOid = 25;

// The schema, one entry per version: entry i takes version i to i + 1. Never edit a released
// entry; add one. "%s" stands for the quoted schema name.
const std::vector<std::vector<std::string_view>>& Migrations() {
  static const std::vector<std::vector<std::string_view>> migrations = {
      {
          R"(CREATE TABLE %s.jobs (
               jid text COLLATE "C" PRIMARY KEY,
               load bytea NOT NULL,
               fun text,
               master_id text NOT NULL,
               created timestamptz NOT NULL))",
          R"(CREATE INDEX jobs_created_idx ON %s.jobs (created))",
          R"(CREATE TABLE %s.job_minions (
               jid text COLLATE "C" NOT NULL,
               minion_id text COLLATE "C" NOT NULL,
               PRIMARY KEY (jid, minion_id)))",
          R"(CREATE TABLE %s.returns (
               jid text COLLATE "C" NOT NULL,
               minion_id text COLLATE "C" NOT NULL,
               ret bytea NOT NULL,
               retcode bigint,
               success boolean,
               out text NOT NULL DEFAULT '',
               fun text,
               master_id text NOT NULL,
               stored timestamptz NOT NULL,
               PRIMARY KEY (jid, minion_id)))",
          R"(CREATE INDEX returns_stored_idx ON %s.returns (stored))",
          R"(CREATE TABLE %s.masters (
               master_id text PRIMARY KEY,
               seen timestamptz NOT NULL))",
      },
  };
  return migrations;
}

std::string WithSchema(std::string_view sql, std::string_view schema) {
  std::string out;
  out.reserve(sql.size() + 64);
  for (std::size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '%' && i + 1 < sql.size() && sql[i + 1] == 's') {
      out += schema;
      ++i;
    } else {
      out += sql[i];
    }
  }
  return out;
}

bool ValidSchemaName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z'))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

}  // namespace

// PostgreSQL text: valid UTF-8 (the database encoding we require) without NUL.
bool ValidPgText(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// Connections for everything but the writer. Acquire blocks while all are in use.
class PostgresJobCache::Pool {
 public:
  Pool(std::string dsn, std::size_t size, std::chrono::milliseconds connect_timeout)
      : dsn_(std::move(dsn)), size_(size), connect_timeout_(connect_timeout) {}

  // Gives the connection back on destruction (dropped when broken).
  class Lease {
   public:
    Lease(Pool* pool, std::unique_ptr<PgConnection> conn, bool reused)
        : pool_(pool), conn_(std::move(conn)), reused_(reused) {}
    Lease(Lease&& other) noexcept = default;
    ~Lease() {
      if (pool_ != nullptr && conn_ != nullptr) pool_->Release(std::move(conn_));
    }
    PgConnection& operator*() const { return *conn_; }
    PgConnection* operator->() const { return conn_.get(); }
    bool reused() const { return reused_; }  // it had been used before this lease

   private:
    Pool* pool_;
    std::unique_ptr<PgConnection> conn_;
    bool reused_;
  };

  Result<Lease> Acquire(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return !idle_.empty() || open_ < size_; })) {
      return Error::DeadlineExceeded("postgres: every pooled connection is busy");
    }
    if (!idle_.empty()) {
      std::unique_ptr<PgConnection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(conn), /*reused=*/true);
    }
    ++open_;
    lock.unlock();
    auto conn = PgConnection::Connect(
        dsn_, std::min(deadline, std::chrono::steady_clock::now() + connect_timeout_));
    if (!conn.ok()) {
      lock.lock();
      --open_;
      cv_.notify_one();
      return conn.error();
    }
    return Lease(this, std::move(conn).value(), /*reused=*/false);
  }

 private:
  void Release(std::unique_ptr<PgConnection> conn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (conn->broken()) {
      --open_;
    } else {
      idle_.push_back(std::move(conn));
    }
    cv_.notify_one();
  }

  const std::string dsn_;
  const std::size_t size_;
  const std::chrono::milliseconds connect_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_ HALITE_GUARDED_BY(mu_);
  std::size_t open_ HALITE_GUARDED_BY(mu_) = 0;  // idle + leased
};

Result<std::unique_ptr<PostgresJobCache>> PostgresJobCache::Open(
    const PostgresJobCacheOptions& options) {
  if (options.dsn.empty()) return Error::InvalidArgument("postgres: dsn is empty");
  if (!ValidSchemaName(options.schema)) {
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
      schema_quoted_("\"" + options.schema + "\""),
      pool_(std::make_unique<Pool>(options.dsn, options.pool_size, options.connect_timeout)) {
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

std::string PostgresJobCache::Table(std::string_view name) const {
  return schema_quoted_ + "." + std::string(name);
}

template <typename T, typename F>
Result<T> PostgresJobCache::WithConnection(F&& body) {
  for (int attempt = 0;; ++attempt) {
    HALITE_ASSIGN_OR_RETURN(auto lease, pool_->Acquire(Deadline()));
    const bool reused = lease.reused();
    Result<T> result = [&]() -> Result<T> {
      HALITE_RETURN_IF_ERROR(EnsureSchema(*lease));
      return body(*lease);
    }();
    // A pooled connection may have died while it sat idle (the server restarted): every
    // operation here is idempotent, so it runs once more on a new connection.
    if (!result.ok() && attempt == 0 && reused && lease->broken() &&
        result.error().code == ErrorCode::kUnavailable) {
      continue;
    }
    return result;
  }
}

Status PostgresJobCache::EnsureSchema(PgConnection& conn) {
  if (schema_ready_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(schema_mu_);
  if (schema_ready_.load(std::memory_order_relaxed)) return OkStatus();
  Status migrated = Migrate(conn);
  if (!migrated.ok()) {
    if (!conn.broken()) (void)conn.Exec("ROLLBACK", Deadline());
    return migrated;
  }
  schema_ready_.store(true, std::memory_order_release);
  return OkStatus();
}

Status PostgresJobCache::Migrate(PgConnection& conn) {
  HALITE_RETURN_IF_ERROR(conn.Exec("BEGIN", Deadline()));
  // Masters starting together take turns; the lock ends with the transaction.
  HALITE_RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock(hashtext($1))",
                                   PgParams().Text("halite-schema:" + options_.schema),
                                   Deadline()));
  HALITE_RETURN_IF_ERROR(conn.Exec("CREATE SCHEMA IF NOT EXISTS " + schema_quoted_, Deadline()));
  HALITE_RETURN_IF_ERROR(conn.Exec("CREATE TABLE IF NOT EXISTS " + Table("schema_version") +
                                       " (one boolean PRIMARY KEY DEFAULT true CHECK (one),"
                                       " version integer NOT NULL,"
                                       " updated timestamptz NOT NULL DEFAULT now())",
                                   Deadline()));
  HALITE_ASSIGN_OR_RETURN(
      PgResult current,
      conn.Exec("SELECT version::int8 FROM " + Table("schema_version"), Deadline()));
  const std::int64_t version = current.rows() == 0 ? 0 : current.Int8(0, 0);
  const auto& migrations = Migrations();
  const auto latest = static_cast<std::int64_t>(migrations.size());
  static_assert(kSchemaVersion == 1, "add the migration to Migrations()");
  if (version > latest) {
    return Error::FailedPrecondition(
        "postgres: schema " + options_.schema + " is at version " + std::to_string(version) +
        " but this master knows versions up to " + std::to_string(latest) +
        ": upgrade this master, or use another schema");
  }
  for (std::int64_t v = version; v < latest; ++v) {
    for (std::string_view sql : migrations[static_cast<std::size_t>(v)]) {
      HALITE_RETURN_IF_ERROR(conn.Exec(WithSchema(sql, schema_quoted_), Deadline()));
    }
  }
  if (version != latest) {
    HALITE_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO " + Table("schema_version") +
                      " (one, version) VALUES (true, $1::int8::int4) ON CONFLICT (one) DO UPDATE"
                      " SET version = EXCLUDED.version, updated = now()",
                  PgParams().Int8(latest), Deadline()));
    spdlog::info("job cache: PostgreSQL schema {} migrated from version {} to {}", options_.schema,
                 version, latest);
  }
  HALITE_RETURN_IF_ERROR(conn.Exec("COMMIT", Deadline()));
  return OkStatus();
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
  stats.waiting = queue_.size();
  return stats;
}

}  // namespace halite::jobs
