// The health-check thread, /health and /metrics of one master (master_daemon_impl.h).
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "halite/common/service_manager.h"
#include "halite/keys/fs.h"
#include "halite/wire/rsa.h"
#include "master_daemon_impl.h"

namespace halite::daemon {

namespace {

// Writes, syncs, reads back and removes a probe file: the directory really works. A full
// volume (ENOSPC, EDQUOT) comes back as ResourceExhausted.
std::optional<Error> ProbeDirectory(const std::filesystem::path& dir, const std::string& self_id) {
  const auto probe = dir / (".health-" + self_id);
  const std::string content = std::to_string(NowMs());
  if (auto st = keys::WriteFileAtomic(probe, content, 0600); !st.ok()) {
    (void)keys::RemoveFile(probe);
    return Error{st.error().code, "cannot write " + dir.string() + ": " + st.error().message};
  }
  auto back = keys::ReadFile(probe);
  if (!back.ok() || *back != content) {
    return Error::Unavailable("cannot read back a probe in " + dir.string());
  }
  (void)keys::RemoveFile(probe);
  return std::nullopt;
}

bool IsFull(const Error& e) { return e.code == ErrorCode::kResourceExhausted; }

constexpr auto kHealthPeriod = std::chrono::seconds(1);
constexpr auto kHealthStale = std::chrono::seconds(5);
// A job cache problem of this master alone, in a cluster, is reported after this long.
constexpr auto kJobCacheGrace = std::chrono::seconds(3);

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
    // A full volume is not a lost one: reads work, and in a cluster every master shares it
    // (the shared folder), so moving minions would help nothing. It is reported as degraded,
    // and what cannot be written fails on its own (an unstored return goes unanswered, so
    // the minion sends it again; a publish is refused with the error).
    std::vector<std::string> full;
    for (const auto& dir : {shared_pki, std::filesystem::path(config.cachedir)}) {
      if (auto p = ProbeDirectory(dir, config.id))
        (IsFull(*p) ? full : problems).push_back(p->message);
    }
    const bool lost = !problems.empty();
    if (lost != storage_lost.exchange(lost)) {
      if (lost) {
        spdlog::error(
            "storage lost ({}): minion requests go unanswered until it is back, so "
            "minions retry on a master that can store",
            problems.front());
      } else {
        spdlog::warn("storage is back: answering minions again");
      }
    }
    std::optional<std::string> job_cache_problem;
    bool job_cache_full = false;
    if (auto st = job_cache->Check(); !st.ok()) {
      job_cache_problem = "job cache: " + st.error().message;
      job_cache_full = IsFull(st.error());
    }
    const bool is_full = !full.empty() || job_cache_full;
    if (is_full != storage_full.exchange(is_full)) {
      if (is_full) {
        spdlog::error(
            "disk full ({}): returns that cannot be stored go unanswered (minions send them "
            "again) and publishes are refused until there is room",
            full.empty() ? *job_cache_problem : full.front());
      } else {
        spdlog::warn("disk has room again");
      }
    }
    std::optional<cluster::QuorumDecision> quorum_now;
    if (peers) {
      quorum_now = CheckQuorum(!job_cache_problem);
      if (!quorum_now->serving) problems.push_back(cluster::QuorumProblem(*quorum_now));
    }
    std::vector<std::string> degraded;
    // etcd away is no reason to move minions: every master lost it alike (or this one is cut
    // from it, and serves its minions on the member list it last read).
    if (membership && !left) {
      if (std::string p = membership->problem(); !p.empty()) {
        degraded.push_back("coordination unavailable: " + p);
      }
    }
    // A lone master has nowhere to send its minions: a full disk is a problem there.
    for (auto& f : full) (peers ? degraded : problems).push_back("disk full: " + std::move(f));
    if (job_cache_problem && job_cache_full && peers) {
      degraded.push_back(*job_cache_problem);
    } else if (job_cache_problem) {
      (JobCacheProblemOnlyDegrades(*job_cache_problem, quorum_now) ? degraded : problems)
          .push_back(*job_cache_problem);
    } else {
      job_cache_down_since = {};
      job_cache_shared = false;
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
    health_degraded = std::move(degraded);
    health_checked_at = std::chrono::steady_clock::now();
    health_cv.wait_for(lock, period, [this] { return health_stop; });
  }
}

cluster::QuorumDecision MasterDaemon::Impl::CheckQuorum(bool job_cache_ok) {
  if (!quorum) quorum.emplace(config.id, cluster::QuorumTracker::Options{});
  std::vector<std::string> ids, reachable;
  for (const auto& link : peers->Status()) {
    ids.push_back(link.id);
    if (link.connected) reachable.push_back(link.id);
  }
  const auto dir = shared_pki / "quorum";
  // A write that fails is the shared folder's problem, which ProbeDirectory reports.
  (void)cluster::WriteQuorumView(dir, {config.id, ++quorum_seq, reachable, job_cache_ok});
  auto views = cluster::ReadQuorumViews(dir, ids);
  auto decision = quorum->Observe(views.ok() ? *views : std::vector<cluster::QuorumView>{},
                                  reachable, std::chrono::steady_clock::now(), job_cache_ok);
  std::lock_guard lock(health_mu);
  if (decision.serving != quorum_decision.serving) {
    if (!decision.serving) {
      spdlog::error("{}", cluster::QuorumProblem(decision));
    } else if (!quorum_decision.side.empty()) {
      spdlog::warn("partition healed: this master serves again (its side: {} masters)",
                   decision.side.size());
    }
  }
  quorum_decision = decision;
  return decision;
}

bool MasterDaemon::Impl::JobCacheProblemOnlyDegrades(
    const std::string& problem, const std::optional<cluster::QuorumDecision>& quorum_now) {
  // A single master reports its job cache problem at once: there is nowhere else to go.
  if (!quorum_now) return false;
  // In a cluster, a job cache every alive master finds down (one PostgreSQL they all use) is
  // no reason to move minions: no master is better off, and draining them all would cut every
  // minion's connection. Returns are held until it is back; /health stays 200 and says so. A
  // problem this master has alone is reported once it has lasted kJobCacheGrace (the peers'
  // views lag a round behind).
  const auto now = std::chrono::steady_clock::now();
  if (job_cache_down_since == std::chrono::steady_clock::time_point{}) job_cache_down_since = now;
  const bool shared = quorum_now->job_cache_down.size() == quorum_now->alive.size();
  if (shared && !job_cache_shared) {
    spdlog::error(
        "{}: every master's job cache is down; staying in service (returns are held "
        "until it is back)",
        problem);
  }
  job_cache_shared = shared;
  return shared || now - job_cache_down_since < kJobCacheGrace;
}

wire::Value MasterDaemon::Impl::QuorumToValue(const cluster::QuorumDecision& d) {
  auto list = [](const std::vector<std::string>& ids) {
    wire::Array out;
    for (const auto& id : ids) out.emplace_back(id);
    return wire::Value(std::move(out));
  };
  return wire::Value::MapOf({{"serving", d.serving},
                             {"side", list(d.side)},
                             {"serving_side", list(d.winner)},
                             {"alive", list(d.alive)},
                             {"job_cache_down", list(d.job_cache_down)}});
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
  std::vector<std::string> degraded;
  cluster::QuorumDecision quorum_now;
  {
    std::lock_guard lock(health_mu);
    problems = health_problems;
    degraded = health_degraded;
    quorum_now = quorum_decision;
    if (health_checked_at.time_since_epoch().count() == 0) {
      problems.push_back("no health check has completed yet");
    } else if (now - health_checked_at > kHealthStale) {
      problems.push_back("health checks are stuck (shared directory or job cache not answering)");
    }
  }
  for (auto& p : LoopProblems()) problems.push_back(std::move(p));
  if (left) {
    problems.push_back("left the cluster (cluster.leave): stop this master");
  } else if (leaving) {
    problems.push_back("leaving the cluster (cluster.leave): draining " +
                       std::to_string(publisher->connected_subscribers()) + " minions");
  }
  wire::Array problem_list;
  for (const auto& p : problems) problem_list.emplace_back(p);
  wire::Value body =
      wire::Value::MapOf({{"id", config.id},
                          {"healthy", problems.empty()},
                          {"problems", wire::Value(std::move(problem_list))},
                          {"connected_minions", publisher->connected_subscribers()}});
  if (!degraded.empty()) {
    wire::Array list;
    for (auto& d : degraded) list.emplace_back(std::move(d));
    body.Set("degraded", wire::Value(std::move(list)));
  }
  if (peers) {
    wire::Array links;
    for (const auto& link : peers->Status()) {
      links.push_back(wire::Value::MapOf({{"id", link.id},
                                          {"connected", link.connected},
                                          {"backlog", link.backlog},
                                          {"problem", link.problem}}));
    }
    body.Set("peers", wire::Value(std::move(links)));
    if (!quorum_now.side.empty()) body.Set("quorum", QuorumToValue(quorum_now));
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
  help("halite_storage_shed_total", "counter",
       "Minion requests left unanswered while the shared folder or cachedir was lost.");
  line("halite_storage_shed_total", id, counters.storage_shed.load());
  help("halite_storage_full", "gauge",
       "1 while the shared folder, cachedir or job cache is full (ENOSPC, EDQUOT).");
  line("halite_storage_full", id, storage_full.load() ? 1.0 : 0.0);
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
    help("halite_storage_publishes_total", "counter",
         "Jobs published here from the job cache because no peer forwarded them.");
    line("halite_storage_publishes_total", id, static_cast<double>(storage_publishes.load()));
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

}  // namespace halite::daemon
