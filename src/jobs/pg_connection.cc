#include "halite/jobs/pg_connection.h"

#include <endian.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace halite::jobs {
namespace {

// Type OIDs (pg_type.dat); stable across PostgreSQL versions.
constexpr unsigned kBoolOid = 16;
constexpr unsigned kByteaOid = 17;
constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;
constexpr unsigned kBoolArrayOid = 1000;
constexpr unsigned kByteaArrayOid = 1001;
constexpr unsigned kTextArrayOid = 1009;
constexpr unsigned kInt8ArrayOid = 1016;
constexpr unsigned kTimestamptzOid = 1184;
// timestamptz's binary form counts microseconds from 2000-01-01 00:00 UTC.
constexpr std::int64_t kPostgresEpochMicros = 946'684'800'000'000;

void PutInt32(std::string& out, std::int32_t value) {
  const std::uint32_t be = htobe32(static_cast<std::uint32_t>(value));
  out.append(reinterpret_cast<const char*>(&be), sizeof be);
}

void PutInt64(std::string& out, std::int64_t value) {
  const std::uint64_t be = htobe64(static_cast<std::uint64_t>(value));
  out.append(reinterpret_cast<const char*>(&be), sizeof be);
}

bool GetInt32(std::string_view& in, std::int32_t& value) {
  if (in.size() < 4) return false;
  std::uint32_t be = 0;
  std::memcpy(&be, in.data(), 4);
  value = static_cast<std::int32_t>(be32toh(be));
  in.remove_prefix(4);
  return true;
}

std::string Trimmed(const char* text) {
  std::string s = text == nullptr ? "" : text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// An error result -> Error, by SQLSTATE class.
Error ServerError(const PGresult* result) {
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string sqlstate = state == nullptr ? "" : state;
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  std::string message = "postgres: " + (primary != nullptr ? std::string(primary)
                                                           : Trimmed(PQresultErrorMessage(result)));
  if (!sqlstate.empty()) message += " [SQLSTATE " + sqlstate + "]";
  const std::string_view cls =
      std::string_view(sqlstate).substr(0, std::min<std::size_t>(2, sqlstate.size()));
  if (cls == "08" || sqlstate.starts_with("57P") || sqlstate == "25006" || sqlstate == "40001" ||
      sqlstate == "40P01") {
    return Error::Unavailable(std::move(message));
  }
  if (cls == "53") return Error::ResourceExhausted(std::move(message));
  if (sqlstate == "42501" || cls == "28") return Error::PermissionDenied(std::move(message));
  if (cls == "22") return Error::InvalidArgument(std::move(message));
  if (cls == "23") return Error::AlreadyExists(std::move(message));
  return Error::Internal(std::move(message));
}

}  // namespace

std::string_view SqlStateOf(const Error& error) {
  const std::string_view m = error.message;
  const auto at = m.rfind("[SQLSTATE ");
  if (at == std::string_view::npos || m.size() < at + 16) return {};
  return m.substr(at + 10, 5);
}

// --- PgParams ----------------------------------------------------------------------------

void PgParams::Add(unsigned oid, std::string bytes, bool null) {
  oids_.push_back(oid);
  formats_.push_back(1);
  if (null) {
    pointers_.push_back(nullptr);
    lengths_.push_back(0);
    return;
  }
  storage_.push_back(std::make_unique<std::string>(std::move(bytes)));
  pointers_.push_back(storage_.back()->data());
  lengths_.push_back(static_cast<int>(storage_.back()->size()));
}

PgParams& PgParams::Text(std::string_view value) {
  Add(kTextOid, std::string(value));
  return *this;
}

PgParams& PgParams::Bytes(std::string_view value) {
  Add(kByteaOid, std::string(value));
  return *this;
}

PgParams& PgParams::Int8(std::int64_t value) {
  std::string bytes;
  PutInt64(bytes, value);
  Add(kInt8Oid, std::move(bytes));
  return *this;
}

PgParams& PgParams::Timestamp(std::chrono::system_clock::time_point value) {
  const std::int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(value.time_since_epoch()).count();
  std::string bytes;
  PutInt64(bytes, micros - kPostgresEpochMicros);
  Add(kTimestamptzOid, std::move(bytes));
  return *this;
}

PgParams& PgParams::Null(unsigned oid) {
  Add(oid, {}, /*null=*/true);
  return *this;
}

template <typename F>
void PgParams::Array(unsigned array_oid, unsigned element_oid, std::size_t count, F element) {
  // array_recv's format: ndim, has-nulls flag, element type, (length, lower bound) per
  // dimension, then each element as (byte length or -1, bytes).
  std::string body;
  bool has_null = false;
  for (std::size_t i = 0; i < count; ++i) {
    std::optional<std::string> value = element(i);
    if (!value) {
      has_null = true;
      PutInt32(body, -1);
      continue;
    }
    PutInt32(body, static_cast<std::int32_t>(value->size()));
    body += *value;
  }
  std::string bytes;
  PutInt32(bytes, count == 0 ? 0 : 1);
  PutInt32(bytes, has_null ? 1 : 0);
  PutInt32(bytes, static_cast<std::int32_t>(element_oid));
  if (count != 0) {
    PutInt32(bytes, static_cast<std::int32_t>(count));
    PutInt32(bytes, 1);
  }
  bytes += body;
  Add(array_oid, std::move(bytes));
}

PgParams& PgParams::TextArray(const std::vector<std::string_view>& values) {
  Array(kTextArrayOid, kTextOid, values.size(),
        [&](std::size_t i) { return std::optional<std::string>(std::string(values[i])); });
  return *this;
}

PgParams& PgParams::BytesArray(const std::vector<std::string_view>& values) {
  Array(kByteaArrayOid, kByteaOid, values.size(),
        [&](std::size_t i) { return std::optional<std::string>(std::string(values[i])); });
  return *this;
}

PgParams& PgParams::Int8Array(const std::vector<std::optional<std::int64_t>>& values) {
  Array(kInt8ArrayOid, kInt8Oid, values.size(), [&](std::size_t i) -> std::optional<std::string> {
    if (!values[i]) return std::nullopt;
    std::string bytes;
    PutInt64(bytes, *values[i]);
    return bytes;
  });
  return *this;
}

PgParams& PgParams::BoolArray(const std::vector<std::optional<bool>>& values) {
  Array(kBoolArrayOid, kBoolOid, values.size(), [&](std::size_t i) -> std::optional<std::string> {
    if (!values[i]) return std::nullopt;
    return std::string(1, *values[i] ? '\1' : '\0');
  });
  return *this;
}

// --- PgResult ----------------------------------------------------------------------------

std::string_view PgResult::Bytes(int row, int column) const {
  return {PQgetvalue(result_.get(), row, column),
          static_cast<std::size_t>(PQgetlength(result_.get(), row, column))};
}

std::int64_t PgResult::Int8(int row, int column) const {
  const std::string_view bytes = Bytes(row, column);
  if (bytes.size() != 8) return 0;
  std::uint64_t be = 0;
  std::memcpy(&be, bytes.data(), 8);
  return static_cast<std::int64_t>(be64toh(be));
}

bool PgResult::Bool(int row, int column) const {
  const std::string_view bytes = Bytes(row, column);
  return !bytes.empty() && bytes[0] != 0;
}

Result<std::vector<std::string>> PgResult::TextArray(int row, int column) const {
  std::string_view in = Bytes(row, column);
  std::int32_t ndim = 0, flags = 0, oid = 0;
  if (!GetInt32(in, ndim) || !GetInt32(in, flags) || !GetInt32(in, oid) || ndim < 0 || ndim > 1) {
    return Error::DataLoss("postgres: malformed array in result");
  }
  std::vector<std::string> out;
  if (ndim == 0) return out;
  std::int32_t count = 0, lower = 0;
  if (!GetInt32(in, count) || !GetInt32(in, lower) || count < 0) {
    return Error::DataLoss("postgres: malformed array in result");
  }
  out.reserve(static_cast<std::size_t>(count));
  for (std::int32_t i = 0; i < count; ++i) {
    std::int32_t length = 0;
    if (!GetInt32(in, length)) return Error::DataLoss("postgres: truncated array in result");
    if (length < 0) continue;
    if (in.size() < static_cast<std::size_t>(length)) {
      return Error::DataLoss("postgres: truncated array in result");
    }
    out.emplace_back(in.substr(0, static_cast<std::size_t>(length)));
    in.remove_prefix(static_cast<std::size_t>(length));
  }
  return out;
}

std::int64_t PgResult::Affected() const {
  const char* text = PQcmdTuples(result_.get());
  return text == nullptr || *text == '\0' ? 0 : std::strtoll(text, nullptr, 10);
}

// --- PgConnection ------------------------------------------------------------------------

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& conninfo,
                                                            PgDeadline deadline) {
  // Defaults first; the operator's string (expanded from "dbname") overrides them. Keepalives
  // and tcp_user_timeout make a silently vanished server show up as a broken connection.
  const char* keywords[] = {
      "application_name", "keepalives",       "keepalives_idle", "keepalives_interval",
      "keepalives_count", "tcp_user_timeout", "dbname",          nullptr};
  const char* values[] = {"halite-master", "1", "10", "5", "3", "15000", conninfo.c_str(), nullptr};
  PGconn* raw = PQconnectStartParams(keywords, values, /*expand_dbname=*/1);
  if (raw == nullptr) return Error::ResourceExhausted("postgres: out of memory");
  std::unique_ptr<PgConnection> conn(new PgConnection(raw));
  if (PQstatus(raw) == CONNECTION_BAD) {
    return Error::InvalidArgument("postgres: " + Trimmed(PQerrorMessage(raw)));
  }
  PostgresPollingStatusType state = PGRES_POLLING_WRITING;
  for (;;) {
    if (state == PGRES_POLLING_OK) break;
    if (state == PGRES_POLLING_FAILED) {
      const std::string message = "postgres: " + Trimmed(PQerrorMessage(raw));
      if (message.find("authentication failed") != std::string::npos ||
          message.find("does not exist") != std::string::npos ||
          message.find("no pg_hba.conf entry") != std::string::npos) {
        return Error::PermissionDenied(message);
      }
      return Error::Unavailable(message);
    }
    if (Status ready = conn->Wait(state == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        !ready.ok()) {
      return ready.error().WithContext("connecting");
    }
    state = PQconnectPoll(raw);
  }
  if (PQsetnonblocking(raw, 1) != 0) {
    return Error::Internal("postgres: " + Trimmed(PQerrorMessage(raw)));
  }
  return conn;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

Error PgConnection::Broken(std::string message) {
  broken_ = true;
  return Error::Unavailable(std::move(message));
}

Status PgConnection::Wait(short events, PgDeadline deadline) {
  for (;;) {
    const int fd = PQsocket(conn_);
    if (fd < 0) return Broken("postgres: connection has no socket");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      broken_ = true;
      return Error::DeadlineExceeded("postgres: no answer in time");
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 60'000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Broken(std::string("postgres: poll: ") + std::strerror(errno));
    if (n > 0) return OkStatus();
  }
}

Result<PgResult> PgConnection::Exec(std::string_view sql, const PgParams& params,
                                    PgDeadline deadline) {
  if (broken_) return Error::Unavailable("postgres: connection is broken");
  const std::string text(sql);
  if (PQsendQueryParams(conn_, text.c_str(), params.size(), params.oids(), params.values(),
                        params.lengths(), params.formats(), /*resultFormat=*/1) == 0) {
    return Broken("postgres: " + Trimmed(PQerrorMessage(conn_)));
  }
  // Send everything, reading while the server talks back so that neither side stalls.
  for (;;) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) break;
    if (flushed < 0) return Broken("postgres: " + Trimmed(PQerrorMessage(conn_)));
    HALITE_RETURN_IF_ERROR(Wait(POLLIN | POLLOUT, deadline));
    if (PQconsumeInput(conn_) == 0) return Broken("postgres: " + Trimmed(PQerrorMessage(conn_)));
  }
  std::optional<PgResult> last;
  std::optional<Error> error;
  for (;;) {
    while (PQisBusy(conn_) != 0) {
      HALITE_RETURN_IF_ERROR(Wait(POLLIN, deadline));
      if (PQconsumeInput(conn_) == 0) {
        return Broken("postgres: " + Trimmed(PQerrorMessage(conn_)));
      }
    }
    PGresult* result = PQgetResult(conn_);
    if (result == nullptr) break;
    const ExecStatusType status = PQresultStatus(result);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
      last.emplace(result);
    } else {
      if (!error) error = ServerError(result);
      PQclear(result);
    }
  }
  if (PQstatus(conn_) == CONNECTION_BAD) {
    broken_ = true;
    if (!error || error->code != ErrorCode::kUnavailable) {
      return Error::Unavailable("postgres: connection lost: " + Trimmed(PQerrorMessage(conn_)));
    }
  }
  if (error) {
    if (error->code == ErrorCode::kUnavailable) broken_ = true;
    return *std::move(error);
  }
  if (!last) return Error::Internal("postgres: no result");
  return std::move(*last);
}

Result<PgPool::Lease> PgPool::Acquire(PgDeadline deadline) {
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

void PgPool::Release(std::unique_ptr<PgConnection> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn->broken()) {
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  cv_.notify_one();
}

}  // namespace halite::jobs
