// PostgresMinionData: the minion data cache in the job cache's PostgreSQL database
// (`cache: postgres`), for clusters that share no folder (cluster_backend: etcd): a minion's
// grains, pillar and mine reach every master whichever master it signed in on.
//
// Tables (jobs/pg_schema.h, version 2): minion_data(minion_id, data, seq, xid, ...) holds the
// msgpack {grains, pillar} of each minion (NULL once cleared: the row stays so that other
// masters see the removal); minion_mine(minion_id, fun, data) one row per mine function.
//
// Grains are read for every publish with a grain target, so each master keeps them all in
// memory, fed by a thread ("minion-data-feed") that every `feed_period` reads the rows
// written since its last round: those whose writing transaction (xid) is at or past the
// snapshot horizon (pg_snapshot_xmin) it took at the start of the previous round. A
// transaction still open then has an xid at or past that horizon, so a write that commits
// late is still read; rows are applied only when their seq is newer than the one held. A
// write on this master is applied at once. Pillar and mine are read from the database on each
// call, as the file backend reads its files.
//
// A Store whose data equals what is held is not written again (a re-sign-in storm costs no
// writes). While the server is unreachable, writes fail with Unavailable, grains are served
// from memory as last read, and the feed logs once and retries every round; nothing blocks
// longer than operation_timeout.
//
// Thread-safe. Threads: "minion-data-feed" (when feed_period > 0).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "halite/common/check.h"
#include "halite/common/result.h"
#include "halite/master/minion_data.h"

namespace halite::jobs {
class PgConnection;
class PgPool;
class PgSchema;
}  // namespace halite::jobs

namespace halite::stores {

struct PostgresMinionDataOptions {
  std::string dsn;                // libpq connection string (the job cache's)
  std::string schema = "halite";  // the job cache's schema
  std::string master_id;          // recorded with each write
  std::size_t pool_size = 4;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds operation_timeout{5000};
  // How often the feed reads other masters' writes; 0: no feed thread (one-shot tools: the
  // first Grains call reads every row once).
  std::chrono::milliseconds feed_period{1000};
};

class PostgresMinionData final : public master::MinionData {
 public:
  // InvalidArgument for bad options; PermissionDenied / FailedPrecondition when the server
  // refuses the login or holds a newer schema. A server that cannot be reached is not an
  // error (logged; the feed keeps trying).
  static Result<std::unique_ptr<PostgresMinionData>> Open(PostgresMinionDataOptions options);
  ~PostgresMinionData() override;
  PostgresMinionData(const PostgresMinionData&) = delete;
  PostgresMinionData& operator=(const PostgresMinionData&) = delete;

  Status Store(std::string_view id, const wire::Value& grains, const wire::Value& pillar) override;
  std::optional<wire::Value> Grains(std::string_view id) override;
  std::optional<wire::Value> Pillar(std::string_view id) override;
  Status ClearData(std::string_view id) override;
  Status Remove(std::string_view id) override;
  Status UpdateMine(std::string_view id, const wire::Value& data, bool clear,
                    std::size_t max_bytes) override;
  Status DeleteMine(std::string_view id, std::string_view fun) override;
  Status FlushMine(std::string_view id) override;
  wire::Value Mine(std::string_view id) override;
  bool HasMine(std::string_view id) override;

  // Feed rounds completed so far (tests wait on a round rather than on time).
  std::uint64_t feed_rounds() const { return rounds_.load(); }
  // Stores skipped because the data was already held (for tests and metrics).
  std::uint64_t unchanged_stores() const { return unchanged_.load(); }

 private:
  struct Entry {
    std::int64_t seq = 0;
    std::size_t hash = 0;  // of the stored bytes
    bool has_data = false;
    std::optional<wire::Value> grains;
  };

  explicit PostgresMinionData(PostgresMinionDataOptions options);
  std::chrono::steady_clock::time_point Deadline() const {
    return std::chrono::steady_clock::now() + options_.operation_timeout;
  }
  // Runs `body` on a pooled connection with the schema in place.
  template <typename T, typename F>
  Result<T> Run(F&& body);
  // Applies one row (data empty = NULL) to memory when `seq` is newer than the one held.
  void Apply(const std::string& id, std::int64_t seq, std::optional<std::string_view> data);
  // Sets data (NULL when `data` is nullopt) and a new seq; applies it here.
  Status Write(std::string_view id, std::optional<std::string> data, bool drop_mine);
  // One feed round: rows written since the last horizon. Serialised by round_mu_.
  Status Round();
  // Grains lookups before the first round ran it themselves (when it did not fail lately);
  // when it fails they serve what is held.
  void EnsureLoaded();
  void FeedMain();

  const PostgresMinionDataOptions options_;
  std::unique_ptr<jobs::PgSchema> schema_;
  std::unique_ptr<jobs::PgPool> pool_;

  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_ HALITE_GUARDED_BY(mu_);
  std::atomic<bool> loaded_{false};  // a round has completed: entries_ holds every row

  std::mutex round_mu_;
  std::int64_t horizon_ HALITE_GUARDED_BY(round_mu_) = 0;
  bool down_ HALITE_GUARDED_BY(round_mu_) = false;  // the last round failed (logged once)
  std::chrono::steady_clock::time_point failed_at_ HALITE_GUARDED_BY(round_mu_);
  std::atomic<std::uint64_t> rounds_{0};
  std::atomic<std::uint64_t> unchanged_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ HALITE_GUARDED_BY(stop_mu_) = false;
  std::thread feed_;
};

}  // namespace halite::stores
