// MasterDaemon's private state, shared by the files that make it up (src/daemon only):
// master_daemon.cc (create, start, run, reload, stop), health.cc (/health, /metrics and the
// health-check thread) and cluster_wiring.cc (the peer channel and membership).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/health_server.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/quorum.h"
#include "halite/daemon/master_daemon.h"
#include "halite/jobs/jid.h"
#include "halite/jobs/job_cache.h"
#include "halite/keys/fs_key_store.h"
#include "halite/master/context.h"
#include "halite/master/presence.h"
#include "halite/master/publisher.h"
#include "halite/master/request_server.h"
#include "halite/master/targeting.h"
#include "halite/render/renderer.h"
#include "halite/stores/stores.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"

namespace halite::daemon {

using master::MasterContext;

// Forwarded publishes older than this are not sent to minions: a peer that was away for
// longer would otherwise start jobs whose callers gave up long ago. Also the replay cap.
inline constexpr std::int64_t kMaxForwardedPublishAgeSeconds = 120;

// Jids published here already (this master's own jobs, peers' forwards, jobs taken from the
// job cache), so each is published once however it arrives. Remembers the last `capacity`.
// Thread-safe.
class SeenJids {
 public:
  explicit SeenJids(std::size_t capacity) : capacity_(capacity) {}
  // True when `jid` is new (and now remembered).
  bool Insert(const std::string& jid) {
    std::lock_guard lock(mu_);
    if (!set_.insert(jid).second) return false;
    order_.push_back(jid);
    if (order_.size() > capacity_) {
      set_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }
  bool Contains(const std::string& jid) const {
    std::lock_guard lock(mu_);
    return set_.count(jid) != 0;
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<std::string> order_;
  std::set<std::string> set_;
};

// Milliseconds on the steady clock (the loops' heartbeats).
inline std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct MasterDaemon::Impl {
  config::MasterConfig config;
  std::unique_ptr<keys::GroupSync> key_sync;  // the key store's fsyncs, grouped
  std::unique_ptr<keys::KeyStore> key_store;
  std::unique_ptr<cluster::ClusterAesStore> cluster_aes;  // in a cluster only
  std::unique_ptr<master::MinionKeys> minion_keys;
  std::unique_ptr<master::SessionKeys> session_keys;
  std::unique_ptr<master::AesKeyRing> aes;
  std::optional<wire::RsaPrivateKey> signing_key;
  std::unique_ptr<jobs::JobCache> job_cache;
  jobs::JidGenerator jids;
  std::unique_ptr<master::MinionData> minion_data;
  std::unique_ptr<auth::Authenticator> authenticator;  // eauth tokens (publish with `token`)
  std::unique_ptr<render::Renderer> renderer;
  master::Counters counters;
  std::atomic<std::uint64_t> counters_reloaded{0};
  std::atomic<std::uint64_t> counters_reload_failed{0};
  std::unique_ptr<master::ReplayGuard> replay;
  std::unique_ptr<master::EventRateLimiter> event_limits;
  master::RecentJobs recent_jobs{64};
  master::Presence presence;
  master::PresenceReporter presence_reporter;  // the maintenance (main) thread only
  MasterContext ctx;

  zmq::context_t zmq_context;
  std::unique_ptr<transport::ZmqLoop> publisher_loop;
  std::unique_ptr<transport::ZmqLoop> request_loop;
  std::unique_ptr<transport::WorkerPool> workers;
  std::unique_ptr<master::Publisher> publisher;
  std::unique_ptr<master::RequestServer> request_server;

  // Cluster mode only.
  std::filesystem::path shared_pki;
  std::unique_ptr<transport::ZmqLoop> cluster_loop;
  std::unique_ptr<cluster::PeerChannel> peers;
  std::unique_ptr<cluster::Membership> membership;  // cluster_backend: etcd
  // cluster.leave (cluster_leave.cc): set when etcd asks this master to leave. From then on
  // /health answers 503 and minion sign-ins go unanswered (MasterContext::leaving); `left`
  // once it has deregistered.
  std::atomic<bool> leaving{false};
  std::atomic<bool> left{false};
  std::mutex leave_mu;
  std::condition_variable leave_cv;
  bool leave_stop = false;   // guarded by leave_mu
  std::thread leave_thread;  // guarded by leave_mu (started on the membership thread)
  std::unique_ptr<master::JobPublisher> cluster_publisher;
  SeenJids seen_jids{10000};
  std::atomic<std::uint64_t> forwarded_publishes{0};
  std::atomic<std::uint64_t> storage_publishes{0};  // jobs found in the job cache only
  std::atomic<bool> storage_scan_running{false};
  std::atomic<std::uint64_t> stale_publishes_dropped{0};

  // Health: a checker thread probes the shared dir, the job cache and the loops every
  // second; the HTTP thread only reads the latest result.
  std::unique_ptr<cluster::HealthServer> health_server;
  std::thread health_checker;
  std::mutex health_mu;
  std::condition_variable health_cv;
  bool health_stop = false;                  // guarded by health_mu
  std::vector<std::string> health_problems;  // guarded by health_mu
  // Shown on /health, not failing it: a job cache down on every master (health.cc).
  std::vector<std::string> health_degraded;  // guarded by health_mu
  // The health thread's own: since when the job cache fails, whether every master's does.
  std::chrono::steady_clock::time_point job_cache_down_since;
  bool job_cache_shared = false;
  std::chrono::steady_clock::time_point health_checked_at;  // guarded by health_mu
  // The shared folder or cachedir failed the last probe (MasterContext::storage_lost).
  std::atomic<bool> storage_lost{false};
  // The shared folder, cachedir or job cache is full (ENOSPC, EDQUOT): degraded, not lost.
  std::atomic<bool> storage_full{false};
  // Which side of a cut between masters serves (quorum.h); cluster mode, health thread only.
  std::optional<cluster::QuorumTracker> quorum;
  std::uint64_t quorum_seq = 0;
  cluster::QuorumDecision quorum_decision;  // guarded by health_mu
  std::atomic<std::int64_t> request_loop_beat{0};
  std::atomic<std::int64_t> publisher_loop_beat{0};

  // health.cc: the health-check thread, /health and /metrics.
  void RunHealthChecks();
  // What /health says of the two ZeroMQ loops: a loop that has not answered a probe within
  // kHealthStale is "not running". Empty: both answer (also what feeds systemd's watchdog).
  std::vector<std::string> LoopProblems() const;
  // One round of the partition rule: writes this master's view (with `job_cache_ok`), reads
  // the peers', decides, and keeps the decision for /health and cluster.status.
  cluster::QuorumDecision CheckQuorum(bool job_cache_ok);
  // Whether this round's job cache problem only degrades (not fails) /health: every alive
  // master of the cluster has it, or it is younger than the grace (health.cc).
  bool JobCacheProblemOnlyDegrades(const std::string& problem,
                                   const std::optional<cluster::QuorumDecision>& quorum_now);
  static wire::Value QuorumToValue(const cluster::QuorumDecision& d);
  // cluster_leave.cc. On the membership thread: starts the drain thread (once).
  void OnLeaveRequested(const cluster::LeaveRequest& request);
  // The "cluster-leave" thread: waits until no minion holds a publish connection or
  // `timeout` passed, then deregisters (Membership::Leave).
  void DrainAndLeave(std::chrono::seconds timeout);
  // Stop: ends a drain in progress (without deregistering: Stop revokes the lease anyway).
  void StopLeaving();
  // cluster_wiring.cc: the peer channel, its handlers and (etcd) membership.
  Status WireCluster(const cluster::CurveKeyPair& curve);
  void OnPeerMessage(const std::string& peer, cluster::PeerMessage message);  // cluster loop
  // Every second (cluster loop timer; the scan itself on a worker): jobs in the job cache
  // that reached this master by no other way are published here.
  void StartStorageScan();
  void ScanJobCacheForJobs();
  wire::Value ClusterStatus();
  cluster::HealthReport Health();
  std::string Metrics();

  bool started = false;
  bool stopped = false;

  std::chrono::steady_clock::time_point next_cleanup;
};

}  // namespace halite::daemon
