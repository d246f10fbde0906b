// HealthChecker: what /health says of one master, decided by a thread of its own
// ("health-check") every `period`, so that the HTTP thread only reads the last result.
//
// A round probes each directory (write, sync, read back, remove: the shared folder and
// cachedir really work), the job cache, and, in a cluster, which side of a cut between masters
// serves (cluster/quorum.h, through the quorum views); it posts a heartbeat onto each loop it
// watches. Its verdict:
// - problems (HTTP 503: HAProxy moves the minions away): a directory that fails, a loop that
//   has not answered within `stale`, a master on the losing side of a cut, a job cache that
//   fails on this master alone for longer than `job_cache_grace`, a full disk on a lone master;
// - degraded (200, listed): a full disk in a cluster (every master shares it, moving minions
//   helps nothing), a job cache every alive master finds down, coordination (etcd) away.
// systemd's watchdog (WatchdogSec=) is fed while the loops answer and rounds complete: a hung
// loop, or a probe stuck on a dead shared folder, stops the feeding and systemd restarts the
// master; a master that is only unhealthy keeps running.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "halite/cluster/health_server.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/quorum.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::cluster {

// A thread that must keep answering (a ZeroMQ loop): `post` runs a task on it.
struct WatchedLoop {
  std::string name;  // "request server": reported as "<name> is not running"
  std::function<void(std::function<void()>)> post;
};

struct HealthCheckerOptions {
  std::string self_id;
  std::vector<std::filesystem::path> dirs;  // probed each round
  std::function<Status()> check_job_cache;  // required
  std::vector<WatchedLoop> loops;
  // A cluster: its peer links and where the quorum views live (both or neither).
  PeerChannel* peers = nullptr;
  QuorumViewStore* quorum_views = nullptr;
  Membership* membership = nullptr;  // cluster_backend: etcd
  // Set once this master has left the cluster (cluster.leave): coordination no longer matters.
  std::function<bool()> left;
  // Problems of the master's life cycle at the time of a request ("leaving the cluster...").
  std::function<std::vector<std::string>()> lifecycle_problems;
  std::function<std::uint64_t()> connected_minions;  // shown on /health
  std::chrono::milliseconds period{1000};
  std::chrono::milliseconds stale{5000};
  std::chrono::milliseconds job_cache_grace{3000};
};

class HealthChecker {
 public:
  explicit HealthChecker(HealthCheckerOptions options);
  ~HealthChecker();  // Stop()
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  void Start();
  void Stop();

  // The body of /health: the last round's verdict plus what is true now (loops, life cycle).
  HealthReport Report();
  // The loops that have not answered within `stale`; empty when all do.
  std::vector<std::string> LoopProblems() const;
  // The last partition decision (cluster mode, once a round ran).
  std::optional<QuorumDecision> quorum() const;
  // The directories failed the last probe (minion requests go unanswered meanwhile).
  const std::atomic<bool>& storage_lost() const { return storage_lost_; }
  // A directory or the job cache is full (ENOSPC, EDQUOT).
  bool storage_full() const { return storage_full_.load(); }
  // The last probe failed because this process had no file descriptor left (EMFILE, ENFILE):
  // reported as degraded, not as lost storage, so minions are still answered.
  bool descriptors_exhausted() const { return descriptors_exhausted_.load(); }

  static wire::Value QuorumToValue(const QuorumDecision& d);

 private:
  void Run();
  void Round();
  QuorumDecision CheckQuorum(bool job_cache_ok);
  bool JobCacheProblemOnlyDegrades(const std::string& problem,
                                   const std::optional<QuorumDecision>& quorum_now);

  const HealthCheckerOptions options_;
  std::vector<std::unique_ptr<std::atomic<std::int64_t>>> beats_;  // one per loop, ms

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                 // guarded by mu_
  std::vector<std::string> problems_;                 // guarded by mu_
  std::vector<std::string> degraded_;                 // guarded by mu_
  std::chrono::steady_clock::time_point checked_at_;  // guarded by mu_
  QuorumDecision quorum_decision_;                    // guarded by mu_
  std::thread thread_;

  // The health thread's own.
  std::chrono::steady_clock::time_point job_cache_down_since_;
  bool job_cache_shared_ = false;
  std::optional<QuorumTracker> quorum_;
  std::uint64_t quorum_seq_ = 0;

  std::atomic<bool> storage_lost_{false};
  std::atomic<bool> storage_full_{false};
  std::atomic<bool> descriptors_exhausted_{false};
};

}  // namespace halite::cluster
