// PgConnection: the one adapter over libpq (jobs/ and the stores that share its database). Every
// call is bounded by a deadline (non-blocking libpq + poll), so a server that stops answering costs
// a timeout, never a hung thread. Parameters and results use PostgreSQL's binary format with
// explicit type OIDs, so bytes (msgpack) travel unescaped and nothing is parsed from text.
//
// Not thread-safe: one thread uses a connection at a time (the pool hands them out).
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/check.h"
#include "halite/common/result.h"

namespace halite::jobs {

using PgDeadline = std::chrono::steady_clock::time_point;

// Query parameters, all in binary format.
class PgParams {
 public:
  PgParams& Text(std::string_view value);
  PgParams& Bytes(std::string_view value);
  PgParams& Int8(std::int64_t value);
  PgParams& Timestamp(std::chrono::system_clock::time_point value);  // timestamptz
  PgParams& Null(unsigned oid);
  PgParams& TextArray(const std::vector<std::string_view>& values);
  PgParams& BytesArray(const std::vector<std::string_view>& values);
  PgParams& Int8Array(const std::vector<std::optional<std::int64_t>>& values);
  PgParams& BoolArray(const std::vector<std::optional<bool>>& values);

  int size() const { return static_cast<int>(oids_.size()); }
  const unsigned* oids() const { return oids_.data(); }
  const char* const* values() const { return pointers_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }

 private:
  void Add(unsigned oid, std::string bytes, bool null = false);
  // Array of `count` elements of type `element_oid`; `element(i)` is nullopt for NULL.
  template <typename F>
  void Array(unsigned array_oid, unsigned element_oid, std::size_t count, F element);

  std::vector<unsigned> oids_;
  std::vector<std::unique_ptr<std::string>> storage_;  // stable addresses for pointers_
  std::vector<const char*> pointers_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

// A query's result (binary format). Owns the PGresult.
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result) {}
  int rows() const { return PQntuples(result_.get()); }
  bool IsNull(int row, int column) const { return PQgetisnull(result_.get(), row, column) != 0; }
  std::string_view Bytes(int row, int column) const;  // text and bytea alike
  std::int64_t Int8(int row, int column) const;       // bigint (8 bytes, network order)
  bool Bool(int row, int column) const;
  // A one-dimensional text[] (NULL elements are skipped). DataLoss when it is malformed.
  Result<std::vector<std::string>> TextArray(int row, int column) const;
  // Rows changed by an INSERT/UPDATE/DELETE without RETURNING.
  std::int64_t Affected() const;

 private:
  struct Free {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  std::unique_ptr<PGresult, Free> result_;
};

class PgConnection {
 public:
  // Connects to `conninfo` (a libpq connection string or URI) within `deadline`.
  // Unavailable when the server cannot be reached; InvalidArgument for a malformed string;
  // PermissionDenied when the server refuses the login.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo,
                                                       PgDeadline deadline);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // One statement (or, without params, several separated by ';'); the last result is
  // returned. Errors carry the server's SQLSTATE and message. A broken connection, a lost
  // server or a missed deadline gives Unavailable / DeadlineExceeded and marks the connection
  // broken: it must then be dropped.
  Result<PgResult> Exec(std::string_view sql, const PgParams& params, PgDeadline deadline);
  Result<PgResult> Exec(std::string_view sql, PgDeadline deadline) {
    return Exec(sql, PgParams(), deadline);
  }
  bool broken() const { return broken_; }

 private:
  explicit PgConnection(PGconn* conn) : conn_(conn) {}
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT) or the deadline passes.
  Status Wait(short events, PgDeadline deadline);
  Error Broken(std::string message);

  PGconn* conn_;
  bool broken_ = false;
};

// Connections to one server, at most `size` open at once. Acquire blocks while all are leased.
// Thread-safe.
class PgPool {
 public:
  PgPool(std::string dsn, std::size_t size, std::chrono::milliseconds connect_timeout)
      : dsn_(std::move(dsn)), size_(size), connect_timeout_(connect_timeout) {}

  // Gives the connection back on destruction (dropped when broken).
  class Lease {
   public:
    Lease(PgPool* pool, std::unique_ptr<PgConnection> conn, bool reused)
        : pool_(pool), conn_(std::move(conn)), reused_(reused) {}
    Lease(Lease&& other) noexcept = default;
    ~Lease() {
      if (pool_ != nullptr && conn_ != nullptr) pool_->Release(std::move(conn_));
    }
    PgConnection& operator*() const { return *conn_; }
    PgConnection* operator->() const { return conn_.get(); }
    bool reused() const { return reused_; }  // it had been used before this lease

   private:
    PgPool* pool_;
    std::unique_ptr<PgConnection> conn_;
    bool reused_;
  };

  // DeadlineExceeded when every connection stays leased until `deadline`; a connection's own
  // errors (Unavailable, PermissionDenied...) when a new one cannot be opened.
  Result<Lease> Acquire(PgDeadline deadline);

  // Runs `body(connection)` on a pooled connection; once more on a new connection when a
  // pooled one turns out to have died while idle (a server restart). For idempotent bodies.
  template <typename T, typename F>
  Result<T> Run(PgDeadline deadline, F&& body) {
    for (int attempt = 0;; ++attempt) {
      HALITE_ASSIGN_OR_RETURN(auto lease, Acquire(deadline));
      const bool reused = lease.reused();
      Result<T> result = body(*lease);
      if (!result.ok() && attempt == 0 && reused && lease->broken() &&
          result.error().code == ErrorCode::kUnavailable) {
        continue;
      }
      return result;
    }
  }

 private:
  void Release(std::unique_ptr<PgConnection> conn);

  const std::string dsn_;
  const std::size_t size_;
  const std::chrono::milliseconds connect_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_ HALITE_GUARDED_BY(mu_);
  std::size_t open_ HALITE_GUARDED_BY(mu_) = 0;  // idle + leased
};

// The SQLSTATE of a server error ("23505"), kept in the message as "[SQLSTATE 23505]".
std::string_view SqlStateOf(const Error& error);

}  // namespace halite::jobs
