#include "halite/stores/postgres_minion_data.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <vector>

#include "halite/common/logging.h"
#include "halite/jobs/pg_connection.h"
#include "halite/jobs/pg_schema.h"

namespace halite::stores {

namespace {

constexpr unsigned kByteaOid = 17;
// Rows read per query of a feed round (the first round reads every minion).
constexpr int kFeedPage = 1000;
// Grains lookups before the first round do not retry a round that failed this recently.
constexpr auto kRoundRetry = std::chrono::seconds(1);

// A statement's outcome without its rows.
Status Done(const Result<jobs::PgResult>& result) {
  if (!result.ok()) return result.error();
  return OkStatus();
}

std::size_t HashBytes(std::string_view bytes) { return std::hash<std::string_view>{}(bytes); }

Status CheckText(std::string_view what, std::string_view text) {
  if (text.empty() || !jobs::ValidPgText(text)) {
    return Error::InvalidArgument("minion data cache: the " + std::string(what) +
                                  " is not valid text");
  }
  return OkStatus();
}

// Read errors become "no data" for the caller; once a minute is enough to say why.
void LogReadError(std::string_view what, const Error& error) {
  static LogLimiter limiter(std::chrono::minutes(1));
  if (auto held_back = limiter.Pass()) {
    spdlog::warn("minion data cache: cannot read {}: {}{}", what, error.ToString(),
                 SuppressedSuffix(*held_back));
  }
}

}  // namespace

Result<std::unique_ptr<PostgresMinionData>> PostgresMinionData::Open(
    PostgresMinionDataOptions options) {
  if (options.dsn.empty()) return Error::InvalidArgument("minion data cache: dsn is empty");
  if (!jobs::ValidPgSchemaName(options.schema)) {
    return Error::InvalidArgument("minion data cache: schema '" + options.schema +
                                  "' must match [a-z_][a-z0-9_]* (at most 63 bytes)");
  }
  if (options.pool_size == 0) return Error::InvalidArgument("minion data cache: pool_size is 0");
  HALITE_RETURN_IF_ERROR(CheckText("master id", options.master_id));
  std::unique_ptr<PostgresMinionData> store(new PostgresMinionData(std::move(options)));
  // Reach the server once now, so that a wrong dsn or a newer schema stops start-up.
  Status ready = store->Run<void>([](jobs::PgConnection&) { return OkStatus(); });
  if (!ready.ok()) {
    const ErrorCode code = ready.error().code;
    if (code != ErrorCode::kUnavailable && code != ErrorCode::kDeadlineExceeded) {
      return ready.error();
    }
    spdlog::warn(
        "minion data cache: PostgreSQL cannot be reached now ({}); starting anyway, targeting "
        "sees no cached grains until it can",
        ready.error().ToString());
  }
  if (store->options_.feed_period.count() > 0) {
    PostgresMinionData* raw = store.get();
    store->feed_ = std::thread([raw] { raw->FeedMain(); });
    pthread_setname_np(store->feed_.native_handle(), "minion-data-feed");
  }
  return store;
}

PostgresMinionData::PostgresMinionData(PostgresMinionDataOptions options)
    : options_(std::move(options)),
      schema_(std::make_unique<jobs::PgSchema>(options_.schema)),
      pool_(std::make_unique<jobs::PgPool>(options_.dsn, options_.pool_size,
                                           options_.connect_timeout)) {}

PostgresMinionData::~PostgresMinionData() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (feed_.joinable()) feed_.join();
}

template <typename T, typename F>
Result<T> PostgresMinionData::Run(F&& body) {
  const auto deadline = Deadline();
  return pool_->Run<T>(deadline, [&](jobs::PgConnection& conn) -> Result<T> {
    if (Status ready = schema_->Ensure(conn, deadline); !ready.ok()) {
      if (conn.broken()) schema_->Invalidate();
      return ready.error();
    }
    return body(conn);
  });
}

void PostgresMinionData::Apply(const std::string& id, std::int64_t seq,
                               std::optional<std::string_view> data) {
  Entry entry;
  entry.seq = seq;
  if (data) {
    entry.has_data = true;
    entry.hash = HashBytes(*data);
    auto unpacked = wire::Unpack(*data);
    if (!unpacked.ok()) {
      spdlog::warn("minion data cache: the data of {} is corrupt: {}", id,
                   unpacked.error().message);
      entry.has_data = false;
    } else if (const wire::Value* grains = unpacked->Find("grains");
               grains != nullptr && grains->is_map()) {
      entry.grains = *grains;
    }
  }
  std::lock_guard lock(mu_);
  auto [it, fresh] = entries_.try_emplace(id);
  if (!fresh && it->second.seq >= seq) return;  // what is held is as new or newer
  it->second = std::move(entry);
}

Status PostgresMinionData::Write(std::string_view id, std::optional<std::string> data,
                                 bool drop_mine) {
  HALITE_RETURN_IF_ERROR(CheckText("minion id", id));
  jobs::PgParams params;
  params.Text(id);
  if (data) {
    params.Bytes(*data);
  } else {
    params.Null(kByteaOid);
  }
  params.Text(options_.master_id);
  // A removal writes a row even for a minion never stored, so other masters' feeds see it.
  std::string sql = "INSERT INTO " + schema_->Table("minion_data") +
                    " (minion_id, data, seq, xid, master_id, updated)"
                    " VALUES ($1, $2, nextval('" +
                    schema_->Table("minion_data_seq") +
                    "'), pg_current_xact_id(), $3, now())"
                    " ON CONFLICT (minion_id) DO UPDATE SET data = EXCLUDED.data,"
                    " seq = EXCLUDED.seq, xid = EXCLUDED.xid, master_id = EXCLUDED.master_id,"
                    " updated = EXCLUDED.updated RETURNING seq";
  if (drop_mine) {
    sql = "WITH gone AS (DELETE FROM " + schema_->Table("minion_mine") + " WHERE minion_id = $1) " +
          sql;
  }
  HALITE_ASSIGN_OR_RETURN(
      std::int64_t seq, Run<std::int64_t>([&](jobs::PgConnection& conn) -> Result<std::int64_t> {
        HALITE_ASSIGN_OR_RETURN(jobs::PgResult r, conn.Exec(sql, params, Deadline()));
        if (r.rows() != 1) return Error::Internal("upsert returned no seq");
        return r.Int8(0, 0);
      }));
  Apply(std::string(id), seq,
        data ? std::optional<std::string_view>(*data) : std::optional<std::string_view>());
  return OkStatus();
}

Status PostgresMinionData::Store(std::string_view id, const wire::Value& grains,
                                 const wire::Value& pillar) {
  std::string bytes = wire::Pack(wire::Value::MapOf({{"grains", grains}, {"pillar", pillar}}),
                                 wire::Packing::kBinType);
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(std::string(id));
    if (it != entries_.end() && it->second.has_data && it->second.hash == HashBytes(bytes)) {
      unchanged_++;
      return OkStatus();
    }
  }
  return Write(id, std::move(bytes), /*drop_mine=*/false);
}

Status PostgresMinionData::ClearData(std::string_view id) {
  return Write(id, std::nullopt, /*drop_mine=*/false);
}

Status PostgresMinionData::Remove(std::string_view id) {
  return Write(id, std::nullopt, /*drop_mine=*/true);
}

void PostgresMinionData::EnsureLoaded() {
  if (loaded_) return;
  {
    std::lock_guard lock(round_mu_);
    if (down_ && std::chrono::steady_clock::now() - failed_at_ < kRoundRetry) return;
  }
  (void)Round();  // Round logs a failure and marks the store down
}

std::optional<wire::Value> PostgresMinionData::Grains(std::string_view id) {
  // Before the first full read a failed load still serves what this master wrote itself:
  // those entries were stored by it, so they are as current as anything the server holds.
  EnsureLoaded();
  std::lock_guard lock(mu_);
  auto it = entries_.find(std::string(id));
  if (it == entries_.end() || !it->second.has_data) return std::nullopt;
  return it->second.grains;
}

std::optional<wire::Value> PostgresMinionData::Pillar(std::string_view id) {
  if (!jobs::ValidPgText(id) || id.empty()) return std::nullopt;
  auto data = Run<std::optional<std::string>>(
      [&](jobs::PgConnection& conn) -> Result<std::optional<std::string>> {
        HALITE_ASSIGN_OR_RETURN(
            jobs::PgResult r,
            conn.Exec("SELECT data FROM " + schema_->Table("minion_data") + " WHERE minion_id = $1",
                      jobs::PgParams().Text(id), Deadline()));
        if (r.rows() == 0 || r.IsNull(0, 0)) return std::optional<std::string>();
        return std::optional<std::string>(std::string(r.Bytes(0, 0)));
      });
  if (!data.ok()) {
    LogReadError("the pillar of " + std::string(id), data.error());
    return std::nullopt;
  }
  if (!*data) return std::nullopt;
  auto unpacked = wire::Unpack(**data);
  if (!unpacked.ok()) return std::nullopt;
  const wire::Value* pillar = unpacked->Find("pillar");
  if (pillar == nullptr || !pillar->is_map()) return wire::Value::EmptyMap();
  return *pillar;
}

wire::Value PostgresMinionData::Mine(std::string_view id) {
  if (!jobs::ValidPgText(id) || id.empty()) return wire::Value::EmptyMap();
  auto mine = Run<wire::Value>([&](jobs::PgConnection& conn) -> Result<wire::Value> {
    HALITE_ASSIGN_OR_RETURN(jobs::PgResult r,
                            conn.Exec("SELECT fun, data FROM " + schema_->Table("minion_mine") +
                                          " WHERE minion_id = $1 ORDER BY fun",
                                      jobs::PgParams().Text(id), Deadline()));
    wire::Map out;  // one row per function (the primary key): appended, never searched
    for (int row = 0; row < r.rows(); ++row) {
      auto value = wire::Unpack(r.Bytes(row, 1));
      if (!value.ok()) {
        spdlog::warn("mine data of {} ({}) is corrupt; left out", id, r.Bytes(row, 0));
        continue;
      }
      out.emplace_back(wire::Value(std::string(r.Bytes(row, 0))), std::move(*value));
    }
    return wire::Value(std::move(out));
  });
  if (!mine.ok()) {
    LogReadError("the mine of " + std::string(id), mine.error());
    return wire::Value::EmptyMap();
  }
  return std::move(*mine);
}

bool PostgresMinionData::HasMine(std::string_view id) {
  if (!jobs::ValidPgText(id) || id.empty()) return false;
  auto any = Run<bool>([&](jobs::PgConnection& conn) -> Result<bool> {
    HALITE_ASSIGN_OR_RETURN(jobs::PgResult r,
                            conn.Exec("SELECT 1 FROM " + schema_->Table("minion_mine") +
                                          " WHERE minion_id = $1 LIMIT 1",
                                      jobs::PgParams().Text(id), Deadline()));
    return r.rows() > 0;
  });
  if (!any.ok()) LogReadError("the mine of " + std::string(id), any.error());
  return any.ok() && *any;
}

Status PostgresMinionData::UpdateMine(std::string_view id, const wire::Value& data, bool clear,
                                      std::size_t max_bytes) {
  if (!data.is_map()) return Error::InvalidArgument("mine data must be a map");
  HALITE_RETURN_IF_ERROR(CheckText("minion id", id));
  // One row per function, the last of a repeated key winning (as a map merge would).
  std::map<std::string, std::string, std::less<>> rows;
  for (const auto& [k, v] : *data.map()) {
    const std::string* fun = k.str();
    if (fun == nullptr) continue;
    HALITE_RETURN_IF_ERROR(CheckText("mine function", *fun));
    rows[*fun] = wire::Pack(v, wire::Packing::kBinType);
  }
  std::vector<std::string_view> funs, values;
  std::size_t sent_bytes = 0;
  for (const auto& [fun, packed] : rows) {
    funs.push_back(fun);
    values.push_back(packed);
    sent_bytes += master::MineEntryBytes(fun, packed.size());
  }
  jobs::PgParams params;
  params.Text(id).TextArray(funs).BytesArray(values);
  const std::string table = schema_->Table("minion_mine");
  // `clear`: the functions not sent are deleted in the same statement as the rest is written.
  std::string sql = "INSERT INTO " + table +
                    " (minion_id, fun, data) SELECT $1, u.fun, u.data FROM"
                    " unnest($2::text[], $3::bytea[]) AS u(fun, data)"
                    " ON CONFLICT (minion_id, fun) DO UPDATE SET data = EXCLUDED.data";
  if (clear) {
    sql = "WITH gone AS (DELETE FROM " + table +
          " WHERE minion_id = $1 AND NOT (fun = ANY($2::text[]))) " + sql;
  }
  if (max_bytes == 0) {
    return Run<void>([&](jobs::PgConnection& conn) -> Status {
      return Done(conn.Exec(sql, params, Deadline()));
    });
  }
  // Bounded: the size check and the write in one transaction, under a lock on this minion's
  // mine that every master takes, so two updates at once cannot both pass the check.
  auto bounded = [&](jobs::PgConnection& conn) -> Status {
    const auto deadline = Deadline();
    HALITE_RETURN_IF_ERROR(conn.Exec("BEGIN", deadline));
    HALITE_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_advisory_xact_lock(hashtext($1))",
                  jobs::PgParams().Text("halite-mine:" + table + ":" + std::string(id)), deadline));
    std::size_t kept_bytes = 0;
    if (!clear) {
      HALITE_ASSIGN_OR_RETURN(
          jobs::PgResult kept,
          conn.Exec("SELECT coalesce(sum(octet_length(fun) + octet_length(data)), 0)::int8 FROM " +
                        table + " WHERE minion_id = $1 AND NOT (fun = ANY($2::text[]))",
                    jobs::PgParams().Text(id).TextArray(funs), deadline));
      kept_bytes = static_cast<std::size_t>(kept.Int8(0, 0));
    }
    if (const std::size_t total = kept_bytes + sent_bytes; total > max_bytes) {
      return Error::ResourceExhausted("the mine of " + std::string(id) + " would be " +
                                      std::to_string(total) + " bytes, over " +
                                      std::to_string(max_bytes));
    }
    HALITE_RETURN_IF_ERROR(conn.Exec(sql, params, deadline));
    return Done(conn.Exec("COMMIT", deadline));
  };
  return Run<void>([&](jobs::PgConnection& conn) -> Status {
    Status st = bounded(conn);
    if (!st.ok() && !conn.broken()) {
      (void)conn.Exec("ROLLBACK", Deadline());  // leave no transaction open on a pooled connection
    }
    return st;
  });
}

Status PostgresMinionData::DeleteMine(std::string_view id, std::string_view fun) {
  HALITE_RETURN_IF_ERROR(CheckText("minion id", id));
  if (!jobs::ValidPgText(fun)) return OkStatus();  // never stored
  return Run<void>([&](jobs::PgConnection& conn) -> Status {
    return Done(conn.Exec(
        "DELETE FROM " + schema_->Table("minion_mine") + " WHERE minion_id = $1 AND fun = $2",
        jobs::PgParams().Text(id).Text(fun), Deadline()));
  });
}

Status PostgresMinionData::FlushMine(std::string_view id) {
  HALITE_RETURN_IF_ERROR(CheckText("minion id", id));
  return Run<void>([&](jobs::PgConnection& conn) -> Status {
    return Done(conn.Exec("DELETE FROM " + schema_->Table("minion_mine") + " WHERE minion_id = $1",
                          jobs::PgParams().Text(id), Deadline()));
  });
}

Status PostgresMinionData::Round() {
  std::lock_guard round(round_mu_);
  const std::int64_t since = horizon_;
  auto next = Run<std::int64_t>([&](jobs::PgConnection& conn) -> Result<std::int64_t> {
    // The horizon first: every transaction below it has ended, so its rows are visible to
    // the reads that follow; the next round reads from here.
    HALITE_ASSIGN_OR_RETURN(
        jobs::PgResult h,
        conn.Exec("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8", Deadline()));
    const std::int64_t horizon = h.Int8(0, 0);
    std::string after;
    for (;;) {
      HALITE_ASSIGN_OR_RETURN(
          jobs::PgResult rows,
          conn.Exec("SELECT minion_id, data, seq FROM " + schema_->Table("minion_data") +
                        " WHERE xid >= $1::text::xid8 AND minion_id > $2"
                        " ORDER BY minion_id LIMIT " +
                        std::to_string(kFeedPage),
                    jobs::PgParams().Text(std::to_string(since)).Text(after), Deadline()));
      for (int row = 0; row < rows.rows(); ++row) {
        std::optional<std::string_view> data;
        if (!rows.IsNull(row, 1)) data = rows.Bytes(row, 1);
        after = std::string(rows.Bytes(row, 0));
        Apply(after, rows.Int8(row, 2), data);
      }
      if (rows.rows() < kFeedPage) break;
    }
    return horizon;
  });
  if (!next.ok()) {
    if (!down_) {
      spdlog::error("minion data cache: cannot read PostgreSQL: {}; serving the grains held",
                    next.error().ToString());
    }
    down_ = true;
    failed_at_ = std::chrono::steady_clock::now();
    return next.error();
  }
  if (down_) spdlog::warn("minion data cache: PostgreSQL readable again");
  down_ = false;
  horizon_ = *next;
  loaded_ = true;
  rounds_++;
  return OkStatus();
}

void PostgresMinionData::FeedMain() {
  std::unique_lock lock(stop_mu_);
  while (!stop_) {
    lock.unlock();
    (void)Round();  // errors are logged on change
    lock.lock();
    stop_cv_.wait_for(lock, options_.feed_period, [this] { return stop_; });
  }
}

}  // namespace halite::stores
