// halite's tables in one PostgreSQL schema, shared by the job cache (postgres_job_cache.h) and
// the minion data cache (stores/postgres_minion_data.h): one version number, migrated forward
// by whichever master or tool gets there first, under an advisory lock.
//
// Version 1: jobs, job_minions, returns, masters (the job cache).
// Version 2: minion_data(minion_id PK, data bytea, seq, xid xid8, master_id, updated) and
//            minion_mine(minion_id, fun; PK both, data bytea) (the minion data cache).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/jobs/pg_connection.h"

namespace halite::jobs {

inline constexpr int kPgSchemaVersion = 2;

// [a-z_][a-z0-9_]*, at most 63 bytes (so it needs no escaping inside quotes).
bool ValidPgSchemaName(std::string_view name);
// PostgreSQL text: valid UTF-8 (the database encoding we require) without NUL.
bool ValidPgText(std::string_view s);

// One schema's tables, created or migrated once per process (and again after Invalidate).
// Thread-safe.
class PgSchema {
 public:
  // `name` must pass ValidPgSchemaName (callers check, with their own message).
  explicit PgSchema(std::string name) : name_(std::move(name)), quoted_("\"" + name_ + "\"") {}

  // Creates or migrates the tables on `conn` unless done already. FailedPrecondition when the
  // schema is newer than this code; the connection's errors otherwise (rolled back).
  Status Ensure(PgConnection& conn, PgDeadline deadline);
  // The server may have lost the schema (a new cluster after an outage): check again.
  void Invalidate() { ready_.store(false, std::memory_order_release); }

  const std::string& name() const { return name_; }
  std::string Table(std::string_view table) const { return quoted_ + "." + std::string(table); }

 private:
  Status Migrate(PgConnection& conn, PgDeadline deadline);

  const std::string name_;
  const std::string quoted_;
  std::mutex mu_;  // serialises migrations within this process
  std::atomic<bool> ready_{false};
};

}  // namespace halite::jobs
