// PostgresJobCache's write path: StoreReturn queues, thread "jobs-pg-writer" commits each
// batch with one INSERT ... ON CONFLICT DO NOTHING RETURNING and holds it while the server is
// away (the schema, the pool and the reads are postgres_job_cache.cc).
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "halite/jobs/pg_connection.h"
#include "halite/jobs/pg_schema.h"
#include "halite/jobs/postgres_job_cache.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {
namespace {

std::string ReturnKey(std::string_view jid, std::string_view minion) {
  std::string key(jid);
  key.push_back('\0');
  key.append(minion);
  return key;
}

}  // namespace

void PostgresJobCache::StoreReturn(JobReturn ret, StoreCallback done) {
  Pending pending{std::move(ret), {}, std::move(done), std::chrono::steady_clock::now()};
  if (!ValidPgText(pending.ret.jid) || !ValidPgText(pending.ret.minion_id) ||
      !ValidPgText(pending.ret.out) || pending.ret.jid.empty() || pending.ret.minion_id.empty()) {
    pending.done(Error::InvalidArgument("return: jid, minion id and outputter must be text"));
    return;
  }
  pending.packed = wire::Pack(pending.ret.ret, wire::Packing::kBinType);
  const std::size_t bytes = QueuedBytes(pending);
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) {
      lock.unlock();
      pending.done(Error::FailedPrecondition("job cache is shut down"));
      return;
    }
    if (queued_bytes_ + bytes > options_.queue_max_bytes && !queue_.empty()) {
      lock.unlock();
      pending.done(Error::ResourceExhausted("job cache: the PostgreSQL write queue is full"));
      return;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(pending));
  }
  cv_.notify_one();
}

std::size_t PostgresJobCache::QueuedBytes(const Pending& p) {
  return QueuedReturnBytes(p.ret, p.packed.size());
}

void PostgresJobCache::WriterMain() {
  for (;;) {
    std::deque<Pending> batch;
    bool give_up = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything queued is done
      // After a failed write, wait before the next try (Shutdown cuts the wait short).
      if (!stopping_ && std::chrono::steady_clock::now() < retry_after_) {
        cv_.wait_until(lock, retry_after_, [&] { return stopping_; });
      }
      // Stopping with the server gone: what is left fails now rather than one timeout each.
      give_up = stopping_ && writer_down_;
      std::size_t bytes = 0;
      while (!queue_.empty() && (give_up || batch.size() < options_.batch_max) &&
             (batch.empty() || give_up ||
              bytes + queue_.front().packed.size() <= options_.batch_max_bytes)) {
        bytes += queue_.front().packed.size();
        queued_bytes_ -= std::min(queued_bytes_, QueuedBytes(queue_.front()));
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      writing_ = batch.size();
    }
    if (give_up) {
      for (Pending& p : batch) p.done(Error::Unavailable("job cache: PostgreSQL is unreachable"));
    } else {
      WriteBatch(batch);
    }
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = 0;
  }
  writer_conn_.reset();
}

void PostgresJobCache::FailOrHold(std::deque<Pending>& batch, const Error& error) {
  failed_writes_.fetch_add(1, std::memory_order_relaxed);
  const bool retryable =
      error.code == ErrorCode::kUnavailable || error.code == ErrorCode::kDeadlineExceeded;
  const auto now = std::chrono::steady_clock::now();
  std::deque<Pending> held;
  for (Pending& p : batch) {
    if (retryable && now - p.queued < options_.retry_for) {
      held.push_back(std::move(p));
    } else {
      p.done(error);
    }
  }
  if (held.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      // Not held across a shutdown: nothing would write them.
    } else {
      for (auto it = held.rbegin(); it != held.rend(); ++it) {
        queued_bytes_ += QueuedBytes(*it);
        queue_.push_front(std::move(*it));
      }
      writing_ -= std::min(writing_, held.size());
      held.clear();
      retry_backoff_ = std::clamp(retry_backoff_ * 2, std::chrono::milliseconds(100),
                                  std::chrono::milliseconds(5000));
      retry_after_ = now + retry_backoff_;
    }
  }
  for (Pending& p : held) p.done(error);
}

Status PostgresJobCache::ConnectWriter() {
  writer_conn_.reset();
  auto conn = PgConnection::Connect(options_.dsn,
                                    std::chrono::steady_clock::now() + options_.connect_timeout);
  if (!conn.ok()) {
    if (!writer_down_) {
      spdlog::error("job cache: cannot reach PostgreSQL: {}; returns are not acknowledged",
                    conn.error().ToString());
    }
    writer_down_ = true;
    return conn.error();
  }
  // A return is acknowledged only once it is on the server's disk, whatever the server's
  // default says.
  if (auto set = conn.value()->Exec("SET synchronous_commit TO on", Deadline()); !set.ok()) {
    return set.error();
  }
  writer_conn_ = std::move(conn).value();
  return OkStatus();
}

void PostgresJobCache::WriteBatch(std::deque<Pending>& batch) {
  // One row per (jid, minion); later copies in the batch are duplicates of the first.
  std::sort(batch.begin(), batch.end(), [](const Pending& a, const Pending& b) {
    return std::tie(a.ret.jid, a.ret.minion_id) < std::tie(b.ret.jid, b.ret.minion_id);
  });
  std::vector<std::size_t> firsts;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (i == 0 || batch[i].ret.jid != batch[i - 1].ret.jid ||
        batch[i].ret.minion_id != batch[i - 1].ret.minion_id) {
      firsts.push_back(i);
    }
  }
  // Unreachable server: the batch waits in the queue (up to retry_for) instead of failing.
  auto fail_all = [&](const Error& error) { FailOrHold(batch, error); };

  bool fresh = false;  // the connection was made for this batch
  if (writer_conn_ == nullptr || writer_conn_->broken()) {
    if (Status connected = ConnectWriter(); !connected.ok()) {
      fail_all(connected.error());
      return;
    }
    fresh = true;
  }
  if (Status ready = EnsureSchema(*writer_conn_); !ready.ok()) {
    fail_all(ready.error());
    return;
  }

  std::vector<std::string_view> jids, minions, rets, outs, funs;
  std::vector<std::optional<std::int64_t>> retcodes;
  std::vector<std::optional<bool>> successes;
  for (std::size_t i : firsts) {
    const Pending& p = batch[i];
    jids.push_back(p.ret.jid);
    minions.push_back(p.ret.minion_id);
    rets.push_back(p.packed);
    retcodes.push_back(p.ret.retcode);
    successes.push_back(p.ret.success);
    outs.push_back(p.ret.out);
    const std::string* fun = p.ret.load.FindStr("fun");
    funs.push_back(fun != nullptr && ValidPgText(*fun) ? std::string_view(*fun) : "");
  }
  PgParams params;
  params.TextArray(jids)
      .TextArray(minions)
      .BytesArray(rets)
      .Int8Array(retcodes)
      .BoolArray(successes)
      .TextArray(outs)
      .TextArray(funs)
      .Text(options_.master_id)
      .Timestamp(std::chrono::system_clock::now());
  const std::string sql =
      "INSERT INTO " + Table("returns") +
      " (jid, minion_id, ret, retcode, success, out, fun, master_id, stored)"
      " SELECT u.jid, u.minion_id, u.ret, u.retcode, u.success, u.out, NULLIF(u.fun, ''), $8, $9"
      " FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int8[], $5::bool[], $6::text[],"
      " $7::text[]) AS u(jid, minion_id, ret, retcode, success, out, fun)"
      " ON CONFLICT (jid, minion_id) DO NOTHING RETURNING jid, minion_id";
  Result<PgResult> inserted = Error::Internal("not run");
  for (int attempt = 0;; ++attempt) {
    inserted = writer_conn_->Exec(sql, params, Deadline());
    if (inserted.ok()) break;
    const std::string_view state = SqlStateOf(inserted.error());
    if (attempt < 2 && (state == "40P01" || state == "40001") && !writer_conn_->broken()) continue;
    // The connection died while idle (a server restart): the insert is idempotent, so it goes
    // once more on a new connection before the batch is refused.
    if (attempt < 2 && !fresh && writer_conn_->broken() &&
        inserted.error().code == ErrorCode::kUnavailable) {
      fresh = true;
      if (ConnectWriter().ok() && EnsureSchema(*writer_conn_).ok()) continue;
    }
    break;
  }
  if (!inserted.ok()) {
    if (inserted.error().code == ErrorCode::kUnavailable ||
        inserted.error().code == ErrorCode::kDeadlineExceeded) {
      if (!writer_down_) {
        spdlog::error("job cache: PostgreSQL write failed: {}; returns are not acknowledged",
                      inserted.error().ToString());
      }
      writer_down_ = true;
      // The schema may be gone with the server (a new cluster): check again next time.
      schema_->Invalidate();
    } else {
      spdlog::error("job cache: PostgreSQL refused {} returns: {}", batch.size(),
                    inserted.error().ToString());
    }
    fail_all(inserted.error());
    return;
  }
  if (writer_down_) {
    spdlog::info("job cache: PostgreSQL reachable again");
    writer_down_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    retry_backoff_ = std::chrono::milliseconds(0);
    retry_after_ = {};
  }
  std::set<std::string> stored;
  for (int row = 0; row < inserted->rows(); ++row) {
    stored.insert(ReturnKey(inserted->Bytes(row, 0), inserted->Bytes(row, 1)));
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    const bool first = std::binary_search(firsts.begin(), firsts.end(), i);
    const bool new_row = first && stored.count(ReturnKey(p.ret.jid, p.ret.minion_id)) != 0;
    p.done(new_row ? StoreOutcome::kStored : StoreOutcome::kDuplicate);
  }
}

}  // namespace halite::jobs
