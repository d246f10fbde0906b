#include "halite/daemon/master_daemon.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <deque>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/health_server.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/shared_state.h"
#include "halite/common/logging.h"
#include "halite/common/service_manager.h"
#include "halite/daemon/peer_runner.h"
#include "halite/daemon/pillar_setup.h"
#include "halite/daemon/reload.h"
#include "halite/jobs/job_cache_registry.h"
#include "halite/keys/auth_policy.h"
#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/keys/key_admin.h"
#include "halite/keys/master_keys.h"
#include "halite/master/context.h"
#include "halite/master/publisher.h"
#include "halite/master/request_server.h"
#include "halite/master/targeting.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/version.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/event.h"
#include "halite/wire/rsa.h"

namespace halite::daemon {

using master::MasterContext;

struct MasterDaemon::Impl {
  config::MasterConfig config;
  std::unique_ptr<keys::GroupSync> key_sync;  // the key store's fsyncs, grouped
  std::unique_ptr<keys::KeyStore> key_store;
  std::unique_ptr<master::MinionKeys> minion_keys;
  std::unique_ptr<master::SessionKeys> session_keys;
  std::unique_ptr<master::AesKeyRing> aes;
  std::optional<wire::RsaPrivateKey> signing_key;
  std::unique_ptr<jobs::JobCache> job_cache;
  jobs::JidGenerator jids;
  std::unique_ptr<master::MinionData> minion_data;
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
  std::unique_ptr<master::JobPublisher> cluster_publisher;
  std::deque<std::string> recent_forwarded_jids;   // cluster loop only
  std::set<std::string> recent_forwarded_jid_set;  // cluster loop only
  std::atomic<std::uint64_t> forwarded_publishes{0};
  std::atomic<std::uint64_t> stale_publishes_dropped{0};

  // Health: a checker thread probes the shared dir, the job cache and the loops every
  // second; the HTTP thread only reads the latest result.
  std::unique_ptr<cluster::HealthServer> health_server;
  std::thread health_checker;
  std::mutex health_mu;
  std::condition_variable health_cv;
  bool health_stop = false;                                 // guarded by health_mu
  std::vector<std::string> health_problems;                 // guarded by health_mu
  std::chrono::steady_clock::time_point health_checked_at;  // guarded by health_mu
  std::atomic<std::int64_t> request_loop_beat{0};
  std::atomic<std::int64_t> publisher_loop_beat{0};

  void RunHealthChecks();
  // What /health says of the two ZeroMQ loops: a loop that has not answered a probe within
  // kHealthStale is "not running". Empty: both answer (also what feeds systemd's watchdog).
  std::vector<std::string> LoopProblems() const;
  void OnPeerMessage(const std::string& peer, cluster::PeerMessage message);  // cluster loop
  wire::Value ClusterStatus();
  cluster::HealthReport Health();
  std::string Metrics();

  bool started = false;
  bool stopped = false;

  std::chrono::steady_clock::time_point next_cleanup;
};

namespace {

void RaiseFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) spdlog::warn("cannot raise RLIMIT_NOFILE");
  }
}

std::string TcpEndpoint(const std::string& interface, int port) {
  if (interface.find(':') != std::string::npos) {
    return "tcp://[" + interface + "]:" + std::to_string(port);
  }
  return "tcp://" + interface + ":" + std::to_string(port);
}

Result<std::string> LoadOrCreateRootKey(const std::filesystem::path& cachedir) {
  // Shared by every master of a cluster (cachedir is shared): exactly one creator wins.
  const auto path = cachedir / ".root_key";
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto existing = keys::ReadFile(path);
    if (existing.ok()) {
      if (wire::Crypticle::FromKeyString(*existing).ok()) return *existing;
      spdlog::warn("{} is corrupt; writing a new one", path.string());
      HALITE_RETURN_IF_ERROR(keys::RemoveFile(path));
    } else if (existing.error().code != ErrorCode::kNotFound) {
      return existing.error();
    }
    std::string key = wire::Crypticle::GenerateKeyString();
    HALITE_ASSIGN_OR_RETURN(bool created, keys::CreateFileExclusive(path, key, 0600));
    if (created) return key;
  }
  return Error::Unavailable("cannot settle " + path.string());
}

// In a cluster a publish goes to this master's minions and, once, to every peer, which
// publishes it to its own minions (salt-wire 10.6, but out of band: never via an event a
// minion could forge).
class ClusterJobPublisher final : public master::JobPublisher {
 public:
  ClusterJobPublisher(master::JobPublisher& local, cluster::PeerChannel& peers)
      : local_(local), peers_(peers) {}
  Status Publish(wire::Value pub_load) override {
    auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    halite::Status queued = peers_.BroadcastPublish(cluster::PeerMessage{
        "publish", wire::Pack(wire::Value::MapOf({{"ts", static_cast<long long>(ts)},  // NOLINT
                                                  {"load", pub_load}}),
                              wire::Packing::kBinType)});
    // A peer's publish queue is full (it is down or slow): the job runs nowhere rather than
    // on some masters' minions only; the caller refuses it (halite_peer_publishes_refused_total).
    if (!queued.ok()) return queued;
    return local_.Publish(std::move(pub_load));
  }

 private:
  master::JobPublisher& local_;
  cluster::PeerChannel& peers_;
};

// Forwarded publishes older than this are not sent to minions: a peer that was away for
// longer would otherwise start jobs whose callers gave up long ago.
constexpr std::int64_t kMaxForwardedPublishAgeSeconds = 120;
// Replay memory per minion (ReplayGuard): far more requests than a minion sends in one
// request_server_ttl window in normal operation.
constexpr std::size_t kNoncesPerMinion = 1024;
constexpr std::size_t kRecentJidsKept = 10000;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Writes, syncs, reads back and removes a probe file: the directory really works.
std::optional<std::string> ProbeDirectory(const std::filesystem::path& dir,
                                          const std::string& self_id) {
  const auto probe = dir / (".health-" + self_id);
  const std::string content = std::to_string(NowMs());
  if (auto st = keys::WriteFileAtomic(probe, content, 0600); !st.ok()) {
    return "cannot write " + dir.string() + ": " + st.error().message;
  }
  auto back = keys::ReadFile(probe);
  if (!back.ok() || *back != content) return "cannot read back a probe in " + dir.string();
  (void)keys::RemoveFile(probe);
  return std::nullopt;
}

// The key acceptance policy, with autosign_file and autoreject_file read now (again on SIGHUP).
Result<keys::AuthPolicyOptions> AuthPolicyFrom(const config::MasterConfig& cfg) {
  keys::AuthPolicyOptions policy;
  policy.auto_accept = cfg.auto_accept;
  policy.open_mode = cfg.open_mode;
  policy.autosign_timeout = cfg.autosign_timeout;
  if (!cfg.autosign_file.empty()) {
    HALITE_ASSIGN_OR_RETURN(policy.autosign_patterns,
                            keys::LoadPatternFile(cfg.autosign_file, cfg.permissive_pki_access));
  }
  if (!cfg.autoreject_file.empty()) {
    HALITE_ASSIGN_OR_RETURN(policy.autoreject_patterns,
                            keys::LoadPatternFile(cfg.autoreject_file, cfg.permissive_pki_access));
  }
  return policy;
}

constexpr auto kHealthPeriod = std::chrono::seconds(1);
constexpr auto kHealthStale = std::chrono::seconds(5);

}  // namespace

void MasterDaemon::Impl::RunHealthChecks() {
  pthread_setname_np(pthread_self(), "health-check");
  const auto watchdog = service::WatchdogInterval();
  // At least two rounds per watchdog interval (systemd's advice), one per second otherwise.
  auto period = std::chrono::duration_cast<std::chrono::milliseconds>(kHealthPeriod);
  if (watchdog) {
    period = std::min(period, std::chrono::duration_cast<std::chrono::milliseconds>(*watchdog / 3));
    period = std::max(period, std::chrono::milliseconds(10));
  }
  std::unique_lock lock(health_mu);
  while (!health_stop) {
    lock.unlock();
    std::vector<std::string> problems;
    if (auto p = ProbeDirectory(shared_pki, config.id)) problems.push_back(*p);
    if (auto p = ProbeDirectory(config.cachedir, config.id)) problems.push_back(*p);
    if (auto st = job_cache->Check(); !st.ok()) {
      problems.push_back("job cache: " + st.error().message);
    }
    // systemd's watchdog (WatchdogSec=) is fed while both loops answered within the stale
    // window and this thread itself gets round: a hung loop, or a probe stuck on a dead
    // shared folder, stops the feeding and systemd restarts the master. A master that is only
    // unhealthy (shared folder refusing writes, job cache down) keeps running: /health
    // already moves its minions away, and a restart would not heal the storage.
    if (watchdog && LoopProblems().empty()) service::NotifyWatchdog();
    request_loop->Post([this] { request_loop_beat = NowMs(); });
    publisher_loop->Post([this] { publisher_loop_beat = NowMs(); });
    lock.lock();
    health_problems = std::move(problems);
    health_checked_at = std::chrono::steady_clock::now();
    health_cv.wait_for(lock, period, [this] { return health_stop; });
  }
}

std::vector<std::string> MasterDaemon::Impl::LoopProblems() const {
  const auto stale_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kHealthStale).count();
  std::vector<std::string> problems;
  if (NowMs() - request_loop_beat.load() > stale_ms) {
    problems.push_back("request server is not running");
  }
  if (NowMs() - publisher_loop_beat.load() > stale_ms)
    problems.push_back("publisher is not running");
  return problems;
}

cluster::HealthReport MasterDaemon::Impl::Health() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::string> problems;
  {
    std::lock_guard lock(health_mu);
    problems = health_problems;
    if (health_checked_at.time_since_epoch().count() == 0) {
      problems.push_back("no health check has completed yet");
    } else if (now - health_checked_at > kHealthStale) {
      problems.push_back("health checks are stuck (shared directory or job cache not answering)");
    }
  }
  for (auto& p : LoopProblems()) problems.push_back(std::move(p));
  wire::Array problem_list;
  for (const auto& p : problems) problem_list.emplace_back(p);
  wire::Value body =
      wire::Value::MapOf({{"id", config.id},
                          {"healthy", problems.empty()},
                          {"problems", wire::Value(std::move(problem_list))},
                          {"connected_minions", publisher->connected_subscribers()}});
  if (peers) {
    wire::Array links;
    for (const auto& link : peers->Status()) {
      links.push_back(wire::Value::MapOf({{"id", link.id},
                                          {"connected", link.connected},
                                          {"backlog", link.backlog},
                                          {"problem", link.problem}}));
    }
    body.Set("peers", wire::Value(std::move(links)));
  }
  return {problems.empty(), body.ToJson()};
}

std::string MasterDaemon::Impl::Metrics() {
  std::string out;
  auto line = [&out](const std::string& name, const std::string& labels, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + buf + "\n";
  };
  auto help = [&out](const std::string& name, const std::string& type, const std::string& text) {
    out += "# HELP " + name + " " + text + "\n# TYPE " + name + " " + type + "\n";
  };
  const std::string id = "master=\"" + config.id + "\"";
  const wire::RsaOperationCounts rsa = wire::RsaOperationsSoFar();
  help("halite_rsa_operations_total", "counter",
       "RSA operations by kind (private: decrypt, sign; public: encrypt, verify).");
  line("halite_rsa_operations_total", id + ",kind=\"private\"",
       static_cast<double>(rsa.private_ops));
  line("halite_rsa_operations_total", id + ",kind=\"public\"", static_cast<double>(rsa.public_ops));
  help("halite_requests_total", "counter", "Requests by command.");
  for (std::size_t i = 0; i < master::kCountedCommandCount; ++i) {
    line("halite_requests_total", id + ",cmd=\"" + master::kCountedCommands[i] + "\"",
         static_cast<double>(counters.requests[i].load()));
  }
  help("halite_auth_total", "counter", "Sign-ins by result.");
  line("halite_auth_total", id + ",result=\"accepted\"", counters.auth_accepted.load());
  line("halite_auth_total", id + ",result=\"pending\"", counters.auth_pending.load());
  line("halite_auth_total", id + ",result=\"rejected\"", counters.auth_rejected.load());
  line("halite_auth_total", id + ",result=\"denied\"", counters.auth_denied.load());
  line("halite_auth_total", id + ",result=\"error\"", counters.auth_errors.load());
  line("halite_auth_total", id + ",result=\"shed\"", counters.auth_shed.load());
  help("halite_config_reloads_total", "counter", "SIGHUP reloads by result.");
  line("halite_config_reloads_total", id + ",result=\"applied\"", counters_reloaded.load());
  line("halite_config_reloads_total", id + ",result=\"failed\"", counters_reload_failed.load());
  help("halite_publishes_total", "counter", "Jobs published from this master.");
  line("halite_publishes_total", id, counters.publishes.load());
  help("halite_publish_replays_total", "counter",
       "Rounds of re-publishing live jobs after minions subscribed.");
  line("halite_publish_replays_total", id, publisher->replays());
  help("halite_publishes_replayed_total", "counter", "Publishes re-sent by those rounds.");
  line("halite_publishes_replayed_total", id, publisher->replayed());
  help("halite_returns_total", "counter", "Job returns by outcome.");
  line("halite_returns_total", id + ",outcome=\"stored\"", counters.returns_stored.load());
  line("halite_returns_total", id + ",outcome=\"duplicate\"", counters.returns_duplicate.load());
  line("halite_returns_total", id + ",outcome=\"failed\"", counters.returns_failed.load());
  help("halite_returns_in_flight", "gauge",
       "Returns received and not yet durable (held while the job cache is unreachable).");
  line("halite_returns_in_flight", id, static_cast<double>(counters.returns_in_flight.load()));
  help("halite_job_cache_write_seconds", "histogram", "Time from a return's arrival to durable.");
  for (std::size_t i = 0; i < master::kLatencyBucketCount; ++i) {
    char le[32];
    std::snprintf(le, sizeof le, "%g", master::kLatencyBuckets[i]);
    line("halite_job_cache_write_seconds_bucket", id + ",le=\"" + le + "\"",
         counters.store_latency_buckets[i].load());
  }
  line("halite_job_cache_write_seconds_bucket", id + ",le=\"+Inf\"",
       counters.store_latency_count.load());
  line("halite_job_cache_write_seconds_sum", id, counters.store_latency_sum_us.load() / 1e6);
  line("halite_job_cache_write_seconds_count", id, counters.store_latency_count.load());
  help("halite_connected_minions", "gauge", "TCP connections on the publish port.");
  line("halite_connected_minions", id, static_cast<double>(publisher->connected_subscribers()));
  help("halite_bad_requests_total", "counter", "Requests answered \"bad load\".");
  line("halite_bad_requests_total", id, counters.bad_requests.load());
  help("halite_minion_events_rejected_total", "counter", "Minion events refused, by reason.");
  line("halite_minion_events_rejected_total", id + ",reason=\"tag\"",
       counters.events_rejected.load());
  line("halite_minion_events_rejected_total", id + ",reason=\"rate\"",
       counters.events_rate_limited.load());
  help("halite_requests_refused_total", "counter",
       "Encrypted requests refused before any handler ran, by reason (docs/security.md).");
  line("halite_requests_refused_total", id + ",reason=\"unsigned_v2\"",
       counters.refused_unsigned.load());
  line("halite_requests_refused_total", id + ",reason=\"version\"",
       counters.refused_version.load());
  line("halite_requests_refused_total", id + ",reason=\"stale\"", counters.refused_stale.load());
  line("halite_requests_refused_total", id + ",reason=\"replay\"", counters.refused_replay.load());
  help("halite_returns_refused_total", "counter",
       "Returns for a job that did not target the minion.");
  line("halite_returns_refused_total", id, counters.returns_refused.load());
  help("halite_requests_shed_total", "counter",
       "Requests dropped unanswered because the worker queue was full.");
  line("halite_requests_shed_total", id, static_cast<double>(request_server->shed()));
  help("halite_request_queue", "gauge", "Requests waiting for a worker.");
  line("halite_request_queue", id, static_cast<double>(request_server->queued()));
  help("halite_request_handler_failures_total", "counter",
       "Requests whose handler failed unexpectedly (answered, process kept).");
  line("halite_request_handler_failures_total", id,
       static_cast<double>(request_server->handler_failures()));
  if (renderer) {
    const render::PoolStats rs = render::StatsOf(*renderer);
    help("halite_pillar_renders_total", "counter", "Pillar files rendered (top files and sls).");
    line("halite_pillar_renders_total", id, static_cast<double>(rs.renders));
    help("halite_pillar_render_failures_total", "counter",
         "Renders that failed, by cause: the file, the deadline (renderer killed), a renderer "
         "crash.");
    line("halite_pillar_render_failures_total", id + ",reason=\"template\"",
         static_cast<double>(rs.failures));
    line("halite_pillar_render_failures_total", id + ",reason=\"timeout\"",
         static_cast<double>(rs.timeouts));
    line("halite_pillar_render_failures_total", id + ",reason=\"crash\"",
         static_cast<double>(rs.crashes));
    help("halite_renderer_spawns_total", "counter", "halite-render processes started.");
    line("halite_renderer_spawns_total", id, static_cast<double>(rs.spawns));
  }
  if (peers) {
    help("halite_peer_up", "gauge", "1 when the link to a peer is up.");
    help("halite_peer_backlog", "gauge", "Messages waiting for a peer's acknowledgement.");
    help("halite_peer_dropped_total", "counter",
         "Messages given up before the peer acknowledged them (events pushed out of a full "
         "backlog, publishes past publish_max_age).");
    help("halite_peer_queued", "gauge", "Messages of a class waiting for the peer's ack.");
    help("halite_peer_sent_total", "counter", "Messages of a class the peer acknowledged.");
    help("halite_peer_received_total", "counter", "Messages of a class received from the peer.");
    help("halite_peer_class_dropped_total", "counter",
         "Messages of a class given up before the peer acknowledged them.");
    help("halite_peer_publishes_refused_total", "counter",
         "Publishes refused because this peer's lossless publish queue was full.");
    for (const auto& link : peers->Status()) {
      std::string labels = id + ",peer=\"" + link.id + "\"";
      line("halite_peer_up", labels, link.connected ? 1 : 0);
      line("halite_peer_backlog", labels, static_cast<double>(link.backlog));
      line("halite_peer_dropped_total", labels, static_cast<double>(link.dropped));
      for (const auto& [cls, stats] :
           {std::pair{"event", &link.events}, std::pair{"publish", &link.publishes}}) {
        std::string class_labels = labels + ",class=\"" + cls + "\"";
        line("halite_peer_queued", class_labels, static_cast<double>(stats->queued));
        line("halite_peer_sent_total", class_labels, static_cast<double>(stats->sent));
        line("halite_peer_received_total", class_labels, static_cast<double>(stats->received));
        line("halite_peer_class_dropped_total", class_labels, static_cast<double>(stats->dropped));
      }
      line("halite_peer_publishes_refused_total", labels,
           static_cast<double>(link.publishes_refused));
    }
  }
  return out;
}

void MasterDaemon::Impl::OnPeerMessage(const std::string& peer, cluster::PeerMessage message) {
  if (message.kind == "event") {
    auto event = wire::UnpackEvent(message.payload);
    if (!event.ok()) {
      spdlog::warn("peer {}: malformed event: {}", peer, event.error().message);
      return;
    }
    publisher->FireLocalOnly(std::move(event->tag), std::move(event->data));
  } else if (message.kind == "publish") {
    auto body = wire::Unpack(message.payload);
    const wire::Value* load = body.ok() ? body->Find("load") : nullptr;
    const std::string* jid = load ? load->FindStr("jid") : nullptr;
    if (!jid) {
      spdlog::warn("peer {}: malformed publish", peer);
      return;
    }
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    auto ts = body->Find("ts") ? body->Find("ts")->int64() : std::nullopt;
    if (!ts || now - *ts > kMaxForwardedPublishAgeSeconds) {
      stale_publishes_dropped++;
      spdlog::warn("peer {}: publish of {} is too old to send to minions; dropped", peer, *jid);
      return;
    }
    if (!recent_forwarded_jid_set.insert(*jid).second) return;  // resent by the peer
    recent_forwarded_jids.push_back(*jid);
    if (recent_forwarded_jids.size() > kRecentJidsKept) {
      recent_forwarded_jid_set.erase(recent_forwarded_jids.front());
      recent_forwarded_jids.pop_front();
    }
    forwarded_publishes++;
    spdlog::debug("publishing {} forwarded by peer {}", *jid, peer);
    // Its returns here are checked against the target (the peer saved the expected minions).
    recent_jobs.Remember(jobs::Job{*jid, *load, {}});
    (void)publisher->Publish(*load);  // the local PUB never refuses
  } else if (message.kind == "rotate") {
    workers->Post([this] {
      auto key = cluster::ReadClusterAes(shared_pki);
      if (!key.ok()) {
        spdlog::error("cluster AES rotation announced but unreadable: {}", key.error().ToString());
        return;
      }
      if (*key != aes->Current()->key_string()) {
        aes->Rotate(*wire::Crypticle::FromKeyString(*key));
        spdlog::warn("Rotating cluster AES key (announced by a peer)");
      }
    });
  } else {
    spdlog::warn("peer {}: unknown message kind '{}'", peer, message.kind);
  }
}

wire::Value MasterDaemon::Impl::ClusterStatus() {
  wire::Array links;
  for (const auto& link : peers->Status()) {
    wire::Value v = wire::Value::MapOf({{"id", link.id},
                                        {"endpoint", link.endpoint},
                                        {"connected", link.connected},
                                        {"backlog", link.backlog},
                                        {"sent", link.sent},
                                        {"received", link.received},
                                        {"dropped", link.dropped},
                                        {"publishes_refused", link.publishes_refused}});
    for (const auto& [cls, stats] :
         {std::pair{"events", &link.events}, std::pair{"publishes", &link.publishes}}) {
      v.Set(cls, wire::Value::MapOf({{"queued", stats->queued},
                                     {"sent", stats->sent},
                                     {"received", stats->received},
                                     {"dropped", stats->dropped}}));
    }
    v.Set("last_contact",
          link.last_contact ? wire::Value(wire::IsoStamp(*link.last_contact)) : wire::Value());
    if (!link.problem.empty()) v.Set("problem", link.problem);
    links.push_back(std::move(v));
  }
  wire::Value status = wire::Value::MapOf(
      {{"id", config.id}, {"cluster_id", config.cluster_id}, {"backend", config.cluster_backend}});
  if (membership) {
    wire::Array names;
    for (const auto& member : membership->Members()) names.push_back(wire::Value(member.name));
    const std::string problem = membership->problem();
    status.Set("members", wire::Value(std::move(names)));
    status.Set("coordination", problem.empty() ? wire::Value("ok") : wire::Value(problem));
  }
  status.Set("peers", wire::Value(std::move(links)));
  status.Set("forwarded_publishes", forwarded_publishes.load());
  status.Set("stale_publishes_dropped", stale_publishes_dropped.load());
  status.Set("publish_replays", publisher->replays());
  status.Set("publishes_replayed", publisher->replayed());
  status.Set("aes_generation", aes->generation());
  status.Set("connected_minions", publisher->connected_subscribers());
  return status;
}

MasterDaemon::MasterDaemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MasterDaemon::~MasterDaemon() { Stop(); }

Result<std::unique_ptr<MasterDaemon>> MasterDaemon::Create(config::MasterConfig config) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  const auto& cfg = impl->config;
  RaiseFileLimit();
  const std::filesystem::path pki_dir = cfg.pki_dir;
  const std::filesystem::path cachedir = cfg.cachedir;
  const std::filesystem::path sock_dir = cfg.sock_dir;
  // Everything the master writes is its user's alone (returns, job arguments, keys, sessions).
  // Each writer asks for 0600 / 0700 itself; the umask also covers what others create for
  // us (ZeroMQ's ipc socket files, between bind and chmod). It is process-wide.
  ::umask(077);
  for (const auto& [dir, mode] :
       {std::pair{pki_dir, 0700}, std::pair{cachedir, 0700}, std::pair{sock_dir, 0700}}) {
    if (auto st = keys::EnsureDir(dir, static_cast<mode_t>(mode)); !st.ok()) {
      return st.error().WithContext("cannot create " + dir.string());
    }
  }
  HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey master_key,
                          keys::LoadOrCreateKeyPair(pki_dir, "master", cfg.keysize));
  HALITE_ASSIGN_OR_RETURN(std::string master_pub, keys::ReadPublicKeyText(pki_dir, "master"));
  impl->signing_key = master_key;
  impl->ctx.pub_key_text = wire::CleanKey(master_pub);
  const bool in_cluster = !cfg.cluster_id.empty();
  impl->shared_pki = in_cluster ? std::filesystem::path(cfg.cluster_pki_dir) : pki_dir;
  std::string aes_key_string;
  std::optional<cluster::CurveKeyPair> curve;
  if (in_cluster) {
    // Every minion-facing key is the cluster's (salt-wire 10.3): all masters look alike.
    // With etcd, masters are names and their addresses are data in their member records.
    if (cfg.cluster_backend != "etcd") {
      HALITE_RETURN_IF_ERROR(
          cluster::CheckClusterIdentity(cfg.id, cfg.interface, cfg.cluster_peers));
    } else if (!cluster::IsValidPeerId(cfg.id)) {
      return Error::InvalidArgument("id: '" + cfg.id + "' cannot name a cluster member");
    }
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(impl->shared_pki, 0700));
    HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey cluster_key,
                            keys::LoadOrCreateKeyPair(impl->shared_pki, "cluster", cfg.keysize));
    HALITE_ASSIGN_OR_RETURN(std::string cluster_pub,
                            keys::ReadPublicKeyText(impl->shared_pki, "cluster"));
    HALITE_RETURN_IF_ERROR(cluster::PublishMasterKey(impl->shared_pki, cfg.id, master_pub));
    HALITE_ASSIGN_OR_RETURN(aes_key_string, cluster::LoadOrCreateClusterAes(impl->shared_pki));
    HALITE_ASSIGN_OR_RETURN(curve,
                            cluster::LoadOrCreateCurveKeys(pki_dir, impl->shared_pki, cfg.id));
    impl->signing_key = cluster_key;
    impl->ctx.pub_key_text = wire::CleanKey(cluster_pub);
  } else {
    // A fresh AES key at every start (as Salt): minions re-authenticate on their first
    // failed decrypt, and the publish serial can safely start at 1 again.
    aes_key_string = wire::Crypticle::GenerateKeyString();
  }

  HALITE_ASSIGN_OR_RETURN(impl->key_sync,
                          keys::GroupSync::Open({impl->shared_pki, "key-sync", nullptr}));
  HALITE_ASSIGN_OR_RETURN(impl->key_store,
                          keys::FsKeyStore::Open(impl->shared_pki, impl->key_sync.get()));
  impl->minion_keys = std::make_unique<master::MinionKeys>(*impl->key_store);
  impl->session_keys =
      std::make_unique<master::SessionKeys>(cachedir / "sessions", cfg.publish_session);
  auto aes = wire::Crypticle::FromKeyString(aes_key_string);
  if (!aes.ok()) return aes.error().WithContext("cluster AES key");
  impl->aes = std::make_unique<master::AesKeyRing>(std::move(*aes));
  impl->minion_data = std::make_unique<master::MinionData>(cachedir);
  impl->renderer = MakeRendererPool(cfg);

  jobs::JobCacheRegistry registry;
  jobs::RegisterBuiltinJobCaches(registry);
  YAML::Node job_cache_options = cfg.job_cache;
  HALITE_ASSIGN_OR_RETURN(
      impl->job_cache, registry.Create(cfg.master_job_cache,
                                       jobs::JobCacheContext{cachedir, cfg.id}, job_cache_options));
  HALITE_ASSIGN_OR_RETURN(impl->ctx.root_key, LoadOrCreateRootKey(cachedir));

  HALITE_ASSIGN_OR_RETURN(keys::AuthPolicyOptions policy, AuthPolicyFrom(cfg));

  impl->zmq_context.set(zmq::ctxopt::max_sockets, 65535);
  impl->zmq_context.set(zmq::ctxopt::io_threads, 1);
  // ZMQ_ZERO_COPY_RECV (10; in libzmq 4.3's draft header, honoured by stable builds) off:
  // received frames are copied out of the connection's 8 KiB read buffer instead of pinning
  // it, so an idle connection keeps one buffer instead of two. About 6.5 KiB of RSS less per
  // minion (docs/benchmarks.md); requests are small, so the copy costs nothing measurable.
  constexpr int kZmqZeroCopyRecv = 10;
  if (zmq_ctx_set(impl->zmq_context.handle(), kZmqZeroCopyRecv, 0) != 0) {
    spdlog::debug("this libzmq has no ZMQ_ZERO_COPY_RECV; keeping zero-copy receives");
  }
  impl->publisher_loop = std::make_unique<transport::ZmqLoop>("publisher");
  impl->request_loop = std::make_unique<transport::ZmqLoop>("req-server");
  impl->workers = std::make_unique<transport::WorkerPool>(
      "worker", static_cast<std::size_t>(std::max(1, cfg.worker_threads)));

  master::PublisherOptions pub_options;
  pub_options.publish_endpoint = TcpEndpoint(cfg.interface, cfg.publish_port);
  pub_options.event_socket_path = (sock_dir / "halite_event_pub.ipc").string();
  pub_options.event_endpoint = "ipc://" + pub_options.event_socket_path;
  pub_options.pub_hwm = cfg.pub_hwm;
  pub_options.backlog = cfg.zmq_backlog;
  pub_options.ipv6 = cfg.ipv6;
  pub_options.tcp_keepalive = cfg.tcp_keepalive ? 1 : 0;
  pub_options.tcp_keepalive_idle = cfg.tcp_keepalive_idle;
  pub_options.tcp_keepalive_cnt = cfg.tcp_keepalive_cnt;
  pub_options.tcp_keepalive_intvl = cfg.tcp_keepalive_intvl;
  pub_options.sign_pub_messages = cfg.sign_pub_messages;
  HALITE_ASSIGN_OR_RETURN(pub_options.sig_hash, wire::ParseSigAlgo(cfg.publish_signing_algorithm));
  pub_options.with_serial = cfg.cluster_id.empty();
  pub_options.replay = cfg.publish_replay;
  pub_options.replay_options.default_window = cfg.timeout;
  pub_options.replay_options.grace = cfg.publish_replay_grace;
  pub_options.replay_options.max_window = std::chrono::seconds(kMaxForwardedPublishAgeSeconds);
  impl->publisher = std::make_unique<master::Publisher>(
      impl->zmq_context, *impl->publisher_loop, *impl->aes, *impl->signing_key, pub_options);

  if (in_cluster) {
    impl->cluster_loop = std::make_unique<transport::ZmqLoop>("cluster");
    cluster::PeerChannelOptions peer_options;
    peer_options.self_id = cfg.id;
    peer_options.bind_endpoint = cluster::TcpEndpoint(cfg.interface, cfg.cluster_pool_port);
    if (cfg.cluster_backend != "etcd") {
      for (const auto& peer : cfg.cluster_peers) {
        peer_options.peers.push_back({peer, cluster::TcpEndpoint(peer, cfg.cluster_pool_port)});
      }
    }
    peer_options.cluster_pki_dir = impl->shared_pki;
    peer_options.keys = *curve;
    impl->peers = std::make_unique<cluster::PeerChannel>(impl->zmq_context, *impl->cluster_loop,
                                                         std::move(peer_options));
    impl->cluster_publisher = std::make_unique<ClusterJobPublisher>(*impl->publisher, *impl->peers);
    Impl* raw = impl.get();
    // Every event fired here goes to every peer; events from peers are only published
    // locally, so nothing is forwarded twice and loops cannot form.
    impl->publisher->AddEventObserver([raw](const std::string& tag, const wire::Value& data) {
      if (tag.rfind("halite/probe/", 0) == 0) return;
      raw->peers->Broadcast(cluster::PeerMessage{"event", wire::PackEvent(tag, data)});
    });
    impl->peers->SetHandler([raw](const std::string& peer, cluster::PeerMessage message) {
      raw->OnPeerMessage(peer, std::move(message));
    });
    impl->ctx.cluster_status = [raw]() { return raw->ClusterStatus(); };
    if (cfg.cluster_backend == "etcd") {
      HALITE_ASSIGN_OR_RETURN(auto etcd, cluster::MakeEtcdClient({cfg.etcd_endpoints}));
      cluster::EtcdMembershipOptions members;
      members.prefix = cfg.etcd_prefix;
      members.self = {cfg.id,
                      cfg.interface,
                      cfg.cluster_pool_port,
                      cfg.publish_port,
                      cfg.ret_port,
                      cfg.health_port,
                      curve->public_key,
                      kVersion,
                      std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()};
      impl->membership = cluster::MakeEtcdMembership(std::move(members), std::move(etcd));
    }
  }

  MasterContext& ctx = impl->ctx;
  ctx.config.Set(std::make_shared<const config::MasterConfig>(impl->config));
  ctx.key_store = impl->key_store.get();
  ctx.minion_keys = impl->minion_keys.get();
  ctx.session_keys = impl->session_keys.get();
  ctx.aes = impl->aes.get();
  ctx.signing_key = &*impl->signing_key;
  ctx.job_cache = impl->job_cache.get();
  ctx.jids = &impl->jids;
  ctx.publisher = impl->cluster_publisher
                      ? impl->cluster_publisher.get()
                      : static_cast<master::JobPublisher*>(impl->publisher.get());
  ctx.events = impl->publisher.get();
  ctx.minion_data = impl->minion_data.get();
  ctx.pillar.Set(
      std::make_shared<const pillar::PillarCompiler>(PillarSettingsFrom(cfg), *impl->renderer));
  ctx.auth_policy.Set(std::make_shared<const keys::AuthPolicyOptions>(std::move(policy)));
  ctx.counters = &impl->counters;
  if (cfg.request_server_ttl.count() > 0) {
    impl->replay = std::make_unique<master::ReplayGuard>(kNoncesPerMinion, cfg.request_server_ttl);
    ctx.replay = impl->replay.get();
  }
  impl->event_limits = std::make_unique<master::EventRateLimiter>(cfg.minion_events_per_second,
                                                                  cfg.minion_events_burst);
  ctx.event_limits = impl->event_limits.get();
  ctx.recent_jobs = &impl->recent_jobs;
  ctx.presence = &impl->presence;
  if (!cfg.peer_run.empty()) ctx.peer_runner = MakePeerRunner(cfg);

  master::RequestServerOptions req_options;
  const std::string req_ipc = (sock_dir / "halite_req.ipc").string();
  req_options.endpoints = {TcpEndpoint(cfg.interface, cfg.ret_port), "ipc://" + req_ipc};
  req_options.ipc_paths = {req_ipc};
  req_options.max_request_bytes = cfg.max_request_bytes;
  req_options.max_queued = static_cast<std::size_t>(cfg.request_queue_max);
  req_options.max_queued_bytes = cfg.request_queue_max_bytes;
  req_options.backlog = cfg.zmq_backlog;
  req_options.ipv6 = cfg.ipv6;
  MasterContext* ctx_ptr = &impl->ctx;
  impl->request_server = std::make_unique<master::RequestServer>(
      impl->zmq_context, *impl->request_loop, *impl->workers,
      [ctx_ptr](std::string body, master::RequestServer::Reply reply,
                std::chrono::steady_clock::time_point received) {
        master::HandleRequest(*ctx_ptr, std::move(body), std::move(reply), received);
      },
      req_options);
  return std::unique_ptr<MasterDaemon>(new MasterDaemon(std::move(impl)));
}

Status MasterDaemon::Start() {
  impl_->publisher_loop->Start();
  impl_->request_loop->Start();
  HALITE_RETURN_IF_ERROR(impl_->publisher->Start());
  if (impl_->peers) {
    impl_->cluster_loop->Start();
    HALITE_RETURN_IF_ERROR(impl_->peers->Start());
    if (impl_->membership) {
      HALITE_RETURN_IF_ERROR(impl_->membership->Start(cluster::PeerLinksFollowing(*impl_->peers)));
    }
  }
  HALITE_RETURN_IF_ERROR(impl_->request_server->Start());
  Impl* raw = impl_.get();
  raw->health_checker = std::thread([raw] { raw->RunHealthChecks(); });
  if (impl_->config.health_port != 0) {
    impl_->health_server = std::make_unique<cluster::HealthServer>(
        impl_->config.interface, impl_->config.health_port, [raw] { return raw->Health(); },
        [raw] { return raw->Metrics(); });
    HALITE_RETURN_IF_ERROR(impl_->health_server->Start());
  }
  impl_->started = true;
  spdlog::info("halite-master {} up: ret {} publish {}", impl_->config.id, impl_->config.ret_port,
               impl_->config.publish_port);
  return OkStatus();
}

void MasterDaemon::RunUntilStopped() {
  auto& impl = *impl_;
  auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(impl.config.loop_interval);
  if (interval.count() <= 0) interval = std::chrono::milliseconds(1000);
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait_until(lock, next, [this] { return stop_requested_; });
      if (stop_requested_) return;
    }
    if (std::chrono::steady_clock::now() >= next) {
      next = std::chrono::steady_clock::now() + interval;
      // Salt's handle_presence: cheap (a lock and two set differences), so on this thread.
      if (impl.config.presence_events) {
        impl.presence_reporter.Tick(impl.presence, *impl.publisher, 2 * interval);
      }
      // Maintenance: job retention and the rotation drop file (salt-wire 5.1, 9.5).
      impl.workers->Post([&impl] {
        // keep_jobs_seconds can change on SIGHUP: read it from the live config.
        const auto keep = impl.ctx.config->keep_jobs_seconds;
        if (keep.count() > 0) {
          auto removed = impl.job_cache->CleanOld(keep);
          if (!removed.ok()) {
            spdlog::error("job cache cleanup: {}", removed.error().ToString());
          } else if (*removed > 0) {
            spdlog::info("job cache cleanup removed {} jobs", *removed);
          }
        }
        auto rotate = keys::ConsumeDropFile(impl.config.cachedir, impl.config.id);
        bool forced = rotate.ok() && *rotate;
        if (!impl.peers) {
          if (forced) {
            auto next_key = wire::Crypticle::FromKeyString(wire::Crypticle::GenerateKeyString());
            impl.aes->Rotate(std::move(*next_key));
            spdlog::warn("Rotating AES key (drop file)");
            impl.publisher->Fire("key", wire::Value::MapOf({{"rotate_aes_key", true}}));
          }
          return;
        }
        // Cluster: one master rotates the shared key (drop file naming it, or the key's age
        // past publish_session) and announces it; every master also re-reads the file in
        // case an announcement was missed.
        std::optional<std::string> rotated;
        if (forced) {
          auto r = cluster::RotateClusterAes(impl.shared_pki, impl.config.id);
          if (r.ok()) rotated = *r;
        } else if (auto age = cluster::ClusterAesAge(impl.shared_pki);
                   age.ok() && *age >= impl.config.publish_session) {
          auto r = cluster::RotateClusterAes(impl.shared_pki, impl.config.id,
                                             impl.config.publish_session);
          if (r.ok()) rotated = *r;
        }
        if (rotated) {
          impl.aes->Rotate(*wire::Crypticle::FromKeyString(*rotated));
          spdlog::warn("Rotating cluster AES key");
          impl.peers->Broadcast(cluster::PeerMessage{"rotate", ""});
          impl.publisher->Fire("rotate_cluster_aes_key",
                               wire::Value::MapOf({{"rotate_cluster_aes_key", true}}));
          return;
        }
        auto on_disk = cluster::ReadClusterAes(impl.shared_pki);
        if (!on_disk.ok()) {
          spdlog::error("cannot read the cluster AES key: {}", on_disk.error().ToString());
        } else if (*on_disk != impl.aes->Current()->key_string()) {
          impl.aes->Rotate(*wire::Crypticle::FromKeyString(*on_disk));
          spdlog::warn("Rotating cluster AES key (changed on disk)");
        }
      });
    }
  }
}

void MasterDaemon::RequestStop() {
  {
    std::lock_guard lock(stop_mu_);
    stop_requested_ = true;
  }
  stop_cv_.notify_all();
}

std::string MasterDaemon::Reload(const std::filesystem::path& config_path) {
  auto& impl = *impl_;
  service::NotifyReloading();
  auto fail = [&](const std::string& why) {
    impl.counters_reload_failed++;
    spdlog::error("SIGHUP: {}; still running with the previous settings", why);
    std::string status = "reload failed: " + why;
    service::NotifyReady(status);
    return status;
  };
  auto loaded = config::LoadMasterConfig(config_path);
  if (!loaded.ok()) {
    // Malformed YAML names the file already; validation problems do not.
    const std::string& why = loaded.error().message;
    return fail(why.rfind(config_path.string(), 0) == 0 ? why : config_path.string() + ": " + why);
  }
  for (const auto& warning : loaded->warnings)
    spdlog::warn("{}: {}", config_path.string(), warning);
  const auto running = impl.ctx.config.Get();
  ReloadPlan plan = PlanReload(*running, loaded->config);
  // Everything that can fail comes first, so that a reload applies all or nothing.
  auto next_policy = AuthPolicyFrom(plan.effective);  // pattern files are read again anyway
  if (!next_policy.ok()) return fail(next_policy.error().ToString());
  auto policy = std::make_shared<const keys::AuthPolicyOptions>(std::move(*next_policy));
  std::shared_ptr<const pillar::PillarCompiler> compiler;
  if (plan.pillar_changed) {
    compiler = std::make_shared<const pillar::PillarCompiler>(PillarSettingsFrom(plan.effective),
                                                              *impl.renderer);
  }
  if (plan.log_level_changed) {
    if (auto level = ParseLogLevel(plan.effective.log_level)) spdlog::set_level(*level);
  }
  impl.ctx.auth_policy.Set(std::move(policy));
  if (compiler) impl.ctx.pillar.Set(std::move(compiler));
  impl.ctx.config.Set(std::make_shared<const config::MasterConfig>(std::move(plan.effective)));
  impl.counters_reloaded++;
  auto join = [](const std::vector<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out.empty() ? std::string("none") : out;
  };
  std::string status = "reloaded; applied: " + join(plan.applied);
  if (!plan.need_restart.empty()) status += "; restart needed for: " + join(plan.need_restart);
  if (plan.need_restart.empty()) {
    spdlog::info("SIGHUP: {}", status);
  } else {
    spdlog::warn("SIGHUP: {}", status);
  }
  service::NotifyReady(status);
  return status;
}

void MasterDaemon::Stop() {
  auto& impl = *impl_;
  if (impl.stopped) return;
  impl.stopped = true;
  if (impl.started) service::NotifyStopping();
  if (impl.health_server) impl.health_server->Stop();
  if (impl.membership) impl.membership->Stop();  // deregisters: the others close their links
  {
    std::lock_guard lock(impl.health_mu);
    impl.health_stop = true;
  }
  impl.health_cv.notify_all();
  if (impl.health_checker.joinable()) impl.health_checker.join();
  if (impl.request_server) impl.request_server->StopIntake();
  if (impl.workers) impl.workers->Shutdown();
  if (impl.key_sync) impl.key_sync->Shutdown();  // answers the sign-ins waiting for a flush
  if (impl.job_cache) impl.job_cache->Shutdown();
  if (impl.request_loop) impl.request_loop->Stop();
  if (impl.cluster_loop) impl.cluster_loop->Stop();
  if (impl.publisher_loop) impl.publisher_loop->Stop();
  impl.peers.reset();
  impl.request_server.reset();
  impl.publisher.reset();
  impl.zmq_context.close();
  spdlog::info("halite-master stopped");
}

}  // namespace halite::daemon
