#include "halite/jobs/pg_schema.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace halite::jobs {
namespace {

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
      {
          R"(CREATE SEQUENCE %s.minion_data_seq)",
          // data: msgpack {grains, pillar} as the file backend's data.p; NULL once removed (the
          // row stays, so that other masters' feeds see the removal). seq orders one minion's
          // writes; xid is the writing transaction, for the feeds' horizon.
          R"(CREATE TABLE %s.minion_data (
               minion_id text COLLATE "C" PRIMARY KEY,
               data bytea,
               seq bigint NOT NULL,
               xid xid8 NOT NULL,
               master_id text NOT NULL,
               updated timestamptz NOT NULL))",
          R"(CREATE INDEX minion_data_xid_idx ON %s.minion_data (xid))",
          R"(CREATE TABLE %s.minion_mine (
               minion_id text COLLATE "C" NOT NULL,
               fun text COLLATE "C" NOT NULL,
               data bytea NOT NULL,
               PRIMARY KEY (minion_id, fun)))",
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

}  // namespace

bool ValidPgSchemaName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z'))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

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

Status PgSchema::Ensure(PgConnection& conn, PgDeadline deadline) {
  if (ready_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_.load(std::memory_order_relaxed)) return OkStatus();
  Status migrated = Migrate(conn, deadline);
  if (!migrated.ok()) {
    if (!conn.broken()) (void)conn.Exec("ROLLBACK", deadline);
    return migrated;
  }
  ready_.store(true, std::memory_order_release);
  return OkStatus();
}

Status PgSchema::Migrate(PgConnection& conn, PgDeadline deadline) {
  HALITE_RETURN_IF_ERROR(conn.Exec("BEGIN", deadline));
  // Masters starting together take turns; the lock ends with the transaction.
  HALITE_RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock(hashtext($1))",
                                   PgParams().Text("halite-schema:" + name_), deadline));
  HALITE_RETURN_IF_ERROR(conn.Exec("CREATE SCHEMA IF NOT EXISTS " + quoted_, deadline));
  HALITE_RETURN_IF_ERROR(conn.Exec("CREATE TABLE IF NOT EXISTS " + Table("schema_version") +
                                       " (one boolean PRIMARY KEY DEFAULT true CHECK (one),"
                                       " version integer NOT NULL,"
                                       " updated timestamptz NOT NULL DEFAULT now())",
                                   deadline));
  HALITE_ASSIGN_OR_RETURN(
      PgResult current,
      conn.Exec("SELECT version::int8 FROM " + Table("schema_version"), deadline));
  const std::int64_t version = current.rows() == 0 ? 0 : current.Int8(0, 0);
  const auto& migrations = Migrations();
  const auto latest = static_cast<std::int64_t>(migrations.size());
  static_assert(kPgSchemaVersion == 2, "add the migration to Migrations()");
  if (version > latest) {
    return Error::FailedPrecondition(
        "postgres: schema " + name_ + " is at version " + std::to_string(version) +
        " but this master knows versions up to " + std::to_string(latest) +
        ": upgrade this master, or use another schema");
  }
  for (std::int64_t v = version; v < latest; ++v) {
    for (std::string_view sql : migrations[static_cast<std::size_t>(v)]) {
      HALITE_RETURN_IF_ERROR(conn.Exec(WithSchema(sql, quoted_), deadline));
    }
  }
  if (version != latest) {
    HALITE_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO " + Table("schema_version") +
                      " (one, version) VALUES (true, $1::int8::int4) ON CONFLICT (one) DO UPDATE"
                      " SET version = EXCLUDED.version, updated = now()",
                  PgParams().Int8(latest), deadline));
    spdlog::info("PostgreSQL schema {} migrated from version {} to {}", name_, version, latest);
  }
  HALITE_RETURN_IF_ERROR(conn.Exec("COMMIT", deadline));
  return OkStatus();
}

}  // namespace halite::jobs
