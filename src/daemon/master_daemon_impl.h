// MasterDaemon's private state, shared by the files that make it up (src/daemon only):
// master_daemon.cc (create, start, run, reload, stop), health.cc (/health, /metrics and the
// health-check thread) and cluster_wiring.cc (the peer channel and membership).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/health_checker.h"
#include "halite/cluster/health_server.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/publish_forwarding.h"
#include "halite/cluster/quorum.h"
#include "halite/common/recent_set.h"
#include "halite/daemon/master_daemon.h"
#include "halite/daemon/tree_digests.h"
#include "halite/jobs/jid.h"
#include "halite/jobs/job_cache.h"
#include "halite/keys/fs_key_store.h"
#include "halite/master/context.h"
#include "halite/master/job_cache_scan.h"
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

// Forwarded publishes older than this are not sent to minions (cluster/publish_forwarding.h).
// Also the replay cap.
inline constexpr std::int64_t kMaxForwardedPublishAgeSeconds = 120;
// Sign-in answers kept for retries (master/auth_replies.h): a retry comes within its minion's
// auth_timeout x auth_tries (5 s x 7 in Salt). An answer is ~2 KiB, so 16 MiB holds the
// answers of ~8,000 sign-ins that waited, more than one 2-core master does in 60 s.
inline constexpr std::size_t kAuthReplyBytes = std::size_t{16} << 20;
inline constexpr std::chrono::seconds kAuthReplyAge{60};

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
  // The maintenance loop's heap trims (common/process_memory.h), and the resident memory
  // they gave back as measured around each (other threads allocate meanwhile: about).
  std::atomic<std::uint64_t> heap_trims{0};
  std::atomic<std::uint64_t> heap_released_bytes{0};
  std::atomic<std::uint64_t> heap_trim_us{0};  // their time, summed
  std::unique_ptr<master::ReplayGuard> replay;
  master::AuthReplies auth_replies{kAuthReplyBytes, kAuthReplyAge};
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
  // Each minion's share of the workers. Its tasks run on `workers`, which Stop() shuts down
  // before either is destroyed.
  std::unique_ptr<master::MinionSlots> minion_slots;
  keys::KeyCounts key_counts;  // max_pending_keys, max_minions
  // File hashes, shared by the file server's workers and the tree digests.
  master::FileHashes file_hashes;
  // The digests of the trees this master serves, in its member record (maintenance loop).
  std::mutex tree_digests_mu;
  TreeDigests tree_digests{&file_hashes};  // guarded by tree_digests_mu
  void RefreshTreeDigests();
  // cluster.leave (cluster_leave.cc): set when etcd asks this master to leave. From then on
  // /health answers 503 and minion sign-ins go unanswered (MasterContext::leaving); `left`
  // once it has deregistered.
  std::atomic<bool> leaving{false};
  std::atomic<bool> left{false};
  std::mutex leave_mu;
  std::condition_variable leave_cv;
  bool leave_stop = false;   // guarded by leave_mu
  std::thread leave_thread;  // guarded by leave_mu (started on the membership thread)
  // Jids published here (own, forwarded, or from the job cache scan): each once.
  RecentSet published_jids{10000};
  std::unique_ptr<cluster::PublishForwarder> forwarder;
  std::unique_ptr<master::JobPublisher> cluster_publisher;  // forwarder, then the local PUB
  std::unique_ptr<master::JobCacheScan> job_cache_scan;
  std::atomic<bool> scan_queued{false};  // a scan is posted to the workers and has not ended

  // /health's verdict, decided by its own thread (cluster/health_checker.h); built by Create,
  // started by Start.
  std::unique_ptr<cluster::HealthChecker> health;
  std::unique_ptr<cluster::HealthServer> health_server;
  std::unique_ptr<cluster::QuorumViewStore> quorum_views;  // cluster mode
  // health.cc: the checker's inputs, and /metrics.
  void MakeHealthChecker();
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
  // that reached this master by no other way are published here (master/job_cache_scan.h).
  void StartStorageScan();
  wire::Value ClusterStatus();
  std::string Metrics();

  bool started = false;
  bool stopped = false;

  std::chrono::steady_clock::time_point next_cleanup;
};

}  // namespace halite::daemon
