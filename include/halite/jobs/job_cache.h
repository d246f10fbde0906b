// JobCache: where jobs live. It stores, per jid, the saved job load and the expected minions,
// and per (jid, minion id) exactly one return (Salt's replay rule: the first return stays).
//
// Thread-safe: every method may be called from any thread at the same time.
// Blocking: SaveJob, LoadJob, LoadReturns, ListJobs, CleanOld and Check may block on disk or
// network. Call them from the blocking pool, never from a socket-owning loop. StoreReturn never
// blocks: it queues the return and reports through a callback on a backend thread once the
// return is durable or has failed. Errors are values; no method throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::jobs {

// One minion's answer to one job.
struct JobReturn {
  std::string jid;
  std::string minion_id;
  wire::Value ret;  // the "return" value
  std::optional<std::int64_t> retcode;
  std::optional<bool> success;
  std::string out;   // outputter name; empty when the minion sent none
  wire::Value load;  // the full _return load as received, for events; not necessarily stored
};

// What a queued return counts towards a job cache's write-queue bound: its packed (or
// bounded: wire::PackedSizeBound) return value, its texts and a fixed overhead.
inline std::size_t QueuedReturnBytes(const JobReturn& r, std::size_t ret_bytes) {
  return ret_bytes + r.jid.size() + r.minion_id.size() + r.out.size() + 64;
}

// A published job.
struct Job {
  std::string jid;
  wire::Value load;  // saved load map: fun, arg, tgt, tgt_type, user, jid, ... (never "key")
  std::vector<std::string> minions;  // expected minions: sorted union of every saved list
};

// The `cmd` in the saved load of a job a minion started itself (its scheduler, salt-call):
// the load is its `_return`'s, as in Salt. Such a job is never published by a master.
inline constexpr const char* kMinionJobCmd = "_return";
inline bool IsMinionJob(const Job& job) {
  const std::string* cmd = job.load.FindStr("cmd");
  return cmd != nullptr && *cmd == kMinionJobCmd;
}

// One line of jobs.list_jobs (Salt's format_jid_instance).
struct JobSummary {
  std::string jid;
  wire::Value function;     // "fun" (a list for a multi-function job), or "unknown-function"
  wire::Value arguments;    // "arg", or an empty array
  wire::Value target;       // "tgt" as saved (a string, or a list for tgt_type list), or
                            // "unknown-target"
  std::string target_type;  // "tgt_type", or "list"
  std::string user;         // "user", or "root"
  std::string start_time;   // "2025, Jan 01 12:00:00.123456" from the jid; empty if not a jid
};

enum class StoreOutcome {
  kStored,     // this call stored the return
  kDuplicate,  // a return for (jid, minion) was already stored; nothing was written
};

class JobCache {
 public:
  using StoreCallback = std::function<void(Result<StoreOutcome>)>;

  virtual ~JobCache() = default;

  // Stores the load and merges `job.minions` into the minion lists already saved for the jid.
  // Durable when it returns; idempotent. The load must be a map; a "key" entry is never stored.
  virtual Status SaveJob(const Job& job) = 0;

  // Error::NotFound when no load was saved for `jid`; Error::DataLoss when it is unreadable.
  virtual Result<Job> LoadJob(std::string_view jid) = 0;

  // Non-blocking: queues the return. `done` runs exactly once, on a backend thread, after the
  // return is durable (kStored), was found already stored (kDuplicate, the first value stays),
  // or failed (an error; nothing is reported as stored unless it is durable). Returns for a jid
  // never saved are stored too. After Shutdown, `done` runs inline with FailedPrecondition.
  // `done` must not call Shutdown or destroy the cache.
  virtual void StoreReturn(JobReturn ret, StoreCallback done) = 0;

  // Every stored return of `jid`, sorted by minion id (JobReturn::load is not filled in). An
  // empty vector when the job is known but nobody returned; Error::NotFound only when the jid
  // is unknown and has no returns.
  virtual Result<std::vector<JobReturn>> LoadReturns(std::string_view jid) = 0;

  // Every job with a saved load, sorted by jid. Unreadable entries are skipped.
  virtual Result<std::vector<JobSummary>> ListJobs() = 0;

  // Removes the jobs (load, minions and returns) stored more than `keep` before `now`, and
  // returns how many it removed. keep == 0 disables cleanup (returns 0).
  virtual Result<std::size_t> CleanOld(std::chrono::seconds keep,
                                       std::chrono::system_clock::time_point now) = 0;
  Result<std::size_t> CleanOld(std::chrono::seconds keep) {
    return CleanOld(keep, std::chrono::system_clock::now());
  }

  // The jids of jobs saved (by any master sharing this cache) at or after `since`, a jid
  // (jids sort by time), in jid order, at most `limit`: how a master of a cluster notices a
  // job its peers could not forward to it (a cut peer link; docs/failure-modes.md). A backend
  // that cannot answer cheaply returns an empty list.
  virtual Result<std::vector<std::string>> JidsSince(std::string_view since, std::size_t limit) {
    (void)since;
    (void)limit;
    return std::vector<std::string>{};
  }

  // Health: OK when a probe can be written to and read back from the store right now.
  virtual Status Check() = 0;

  // Completes every queued StoreReturn (their callbacks run) and stops the backend's threads.
  // Idempotent; the destructor calls it too. Not to be called from a StoreCallback.
  virtual void Shutdown() = 0;
};

}  // namespace halite::jobs
