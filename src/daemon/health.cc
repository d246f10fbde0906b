// The inputs of one master's health checker (cluster/health_checker.h) and /metrics.

#include <cstdio>

#include "halite/common/descriptors.h"
#include "halite/common/process_memory.h"
#include "halite/wire/rsa.h"
#include "master_daemon_impl.h"

namespace halite::daemon {

void MasterDaemon::Impl::MakeHealthChecker() {
  cluster::HealthCheckerOptions options;
  options.self_id = config.id;
  options.dirs = {shared_pki, std::filesystem::path(config.cachedir)};
  options.check_job_cache = [this] { return job_cache->Check(); };
  options.loops = {{"request server", [this](std::function<void()> f) { request_loop->Post(f); }},
                   {"publisher", [this](std::function<void()> f) { publisher_loop->Post(f); }}};
  options.peers = peers.get();
  options.quorum_views = peers ? quorum_views.get() : nullptr;
  // Coordination is etcd's; the files backend's record lives where the storage probe looks.
  options.membership = config.cluster_backend == "etcd" ? membership.get() : nullptr;
  options.left = [this] { return left.load(); };
  options.lifecycle_problems = [this]() -> std::vector<std::string> {
    if (left) return {"left the cluster (cluster.leave): stop this master"};
    if (leaving) {
      return {"leaving the cluster (cluster.leave): draining " +
              std::to_string(publisher->connected_subscribers()) + " minions"};
    }
    return {};
  };
  options.connected_minions = [this] { return publisher->connected_subscribers(); };
  health = std::make_unique<cluster::HealthChecker>(std::move(options));
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
  line("halite_auth_total", id + ",result=\"repeat\"", counters.auth_repeated.load());
  line("halite_auth_total", id + ",result=\"full\"", counters.auth_full.load());
  help("halite_storage_shed_total", "counter",
       "Minion requests left unanswered while the shared folder or cachedir was lost.");
  line("halite_storage_shed_total", id, counters.storage_shed.load());
  help("halite_storage_full", "gauge",
       "1 while the shared folder, cachedir or job cache is full (ENOSPC, EDQUOT).");
  line("halite_storage_full", id, health->storage_full() ? 1.0 : 0.0);
  help("halite_file_descriptors_exhausted", "gauge",
       "1 while the last storage probe found no file descriptor left (RLIMIT_NOFILE).");
  line("halite_file_descriptors_exhausted", id, health->descriptors_exhausted() ? 1.0 : 0.0);
  help("process_open_fds", "gauge", "Open file descriptors.");
  line("process_open_fds", id, static_cast<double>(OpenFileDescriptors()));
  help("process_max_fds", "gauge", "The file descriptor limit (RLIMIT_NOFILE).");
  line("process_max_fds", id, static_cast<double>(FileDescriptorLimit()));
  help("process_resident_memory_bytes", "gauge", "Resident memory (VmRSS).");
  line("process_resident_memory_bytes", id, static_cast<double>(ResidentBytes()));
  help("halite_heap_trims_total", "counter",
       "Heap trims (malloc_trim), one per maintenance loop (loop_interval).");
  line("halite_heap_trims_total", id, static_cast<double>(heap_trims.load()));
  help("halite_heap_released_bytes_total", "counter",
       "Resident memory the heap trims gave back, as measured around each.");
  line("halite_heap_released_bytes_total", id, static_cast<double>(heap_released_bytes.load()));
  help("halite_heap_trim_seconds_total", "counter", "Time the heap trims took, summed.");
  line("halite_heap_trim_seconds_total", id, static_cast<double>(heap_trim_us.load()) / 1e6);
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
  help("halite_connected_minions", "gauge",
       "Connections on the publish port subscribed to every publish (minions).");
  line("halite_connected_minions", id, static_cast<double>(publisher->connected_subscribers()));
  help("halite_publish_port_connections", "gauge",
       "TCP connections on the publish port, in their handshake or subscribed.");
  line("halite_publish_port_connections", id,
       static_cast<double>(publisher->publish_port_connections()));
  help("halite_publish_port_closed_total", "counter",
       "Publish port connections closed for what they sent, or for no subscription in time.");
  line("halite_publish_port_closed_total", id, publisher->refused_subscribers());
  help("halite_publish_topic_subscriptions_total", "counter",
       "Subscriptions to a topic other than \"\" (zmq_filtering), which receive nothing.");
  line("halite_publish_topic_subscriptions_total", id, publisher->topic_subscriptions());
  help("halite_publishes_dropped_total", "counter",
       "Publishes a minion missed because its connection's queue (pub_hwm) was full.");
  line("halite_publishes_dropped_total", id, publisher->dropped_publishes());
  help("halite_bad_requests_total", "counter", "Requests answered \"bad load\".");
  line("halite_bad_requests_total", id, counters.bad_requests.load());
  help("halite_minion_events_rejected_total", "counter", "Minion events refused, by reason.");
  line("halite_minion_events_rejected_total", id + ",reason=\"tag\"",
       counters.events_rejected.load());
  line("halite_minion_events_rejected_total", id + ",reason=\"size\"",
       counters.events_too_large.load());
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
  help("halite_minion_requests_dropped_total", "counter",
       "Requests dropped unanswered because their minion had minion_requests_waiting waiting.");
  line("halite_minion_requests_dropped_total", id,
       static_cast<double>(minion_slots ? minion_slots->dropped() : 0));
  help("halite_minion_requests_waiting", "gauge",
       "Requests waiting for their minion's share of the workers (minion_requests_running).");
  line("halite_minion_requests_waiting", id,
       static_cast<double>(minion_slots ? minion_slots->waiting() : 0));
  help("halite_file_hashes_total", "counter",
       "File server hashes (_file_hash): read from disk, or answered from memory.");
  line("halite_file_hashes_total", id + ",source=\"read\"",
       static_cast<double>(file_hashes.read()));
  line("halite_file_hashes_total", id + ",source=\"cache\"",
       static_cast<double>(file_hashes.from_memory()));
  help("halite_mine_updates_refused_total", "counter",
       "Mine updates refused: the minion's mine would have exceeded mine_max_bytes.");
  line("halite_mine_updates_refused_total", id, counters.mine_refused.load());
  help("halite_returns_refused_total", "counter",
       "Returns for a job that did not target the minion.");
  line("halite_returns_refused_total", id, counters.returns_refused.load());
  help("halite_requests_shed_total", "counter",
       "Requests dropped unanswered because the worker queue was full.");
  line("halite_requests_shed_total", id, static_cast<double>(request_server->shed()));
  help("halite_request_replies_dropped_total", "counter",
       "Replies dropped because their connection held replies_queued_per_peer unread ones.");
  line("halite_request_replies_dropped_total", id,
       static_cast<double>(request_server->unread_dropped()));
  help("halite_request_queue", "gauge", "Requests waiting for a worker.");
  line("halite_request_queue", id, static_cast<double>(request_server->queued()));
  help("halite_request_handler_failures_total", "counter",
       "Requests whose handler failed unexpectedly (answered, process kept).");
  line(
      "halite_request_handler_failures_total", id,
      static_cast<double>(request_server->handler_failures() + counters.handler_exceptions.load()));
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
    line("halite_storage_publishes_total", id, static_cast<double>(job_cache_scan->published()));
    help("halite_peer_up", "gauge", "1 when the link to a peer is up.");
    help("halite_peer_backlog", "gauge", "Messages waiting for a peer's acknowledgement.");
    help("halite_peer_dropped_total", "counter",
         "Messages given up before the peer acknowledged them (events pushed out of a full "
         "backlog, publishes past publish_max_age).");
    help("halite_peer_queued", "gauge", "Messages of a class waiting for the peer's ack.");
    help("halite_peer_queued_bytes", "gauge",
         "Bytes of a class's messages waiting for the peer's ack (events: at most "
         "cluster_event_backlog_bytes).");
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
        line("halite_peer_queued_bytes", class_labels, static_cast<double>(stats->queued_bytes));
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
