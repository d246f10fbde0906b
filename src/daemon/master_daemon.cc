#include "halite/daemon/master_daemon.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <deque>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "halite/auth/publisher_acl.h"
#include "halite/cluster/curve_keys.h"
#include "halite/cluster/health_server.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/shared_state.h"
#include "halite/common/descriptors.h"
#include "halite/common/logging.h"
#include "halite/common/process_memory.h"
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
#include "master_daemon_impl.h"

namespace halite::daemon {

using master::MasterContext;

namespace {

void RaiseFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) spdlog::warn("cannot raise RLIMIT_NOFILE");
  }
  // A connected minion holds two descriptors here (request and publish connections), and a
  // third while it signs in (Salt's sign-in has its own connection): a storm after a restart
  // or rotation needs three per minion at once (docs/benchmarks.md, "10,000 minions").
  const std::uint64_t limit = FileDescriptorLimit();
  spdlog::info("file descriptor limit {}: room for about {} minions signing in at once", limit,
               limit > 300 ? (limit - 300) / 3 : 0);
}

std::string TcpEndpoint(const std::string& interface, int port) {
  if (interface.find(':') != std::string::npos) {
    return "tcp://[" + interface + "]:" + std::to_string(port);
  }
  return "tcp://" + interface + ":" + std::to_string(port);
}

Result<std::string> LoadOrCreateRootKey(const std::filesystem::path& cachedir) {
  // Shared by every master of a cluster (cachedir is shared): exactly one creator wins.
  return auth::LoadOrCreateKeyFile(cachedir / ".root_key", 0600);
}

// Replay memory per minion (ReplayGuard): far more requests than a minion sends in one
// request_server_ttl window in normal operation.
constexpr std::size_t kNoncesPerMinion = 1024;

// The key acceptance policy, with autosign_file and autoreject_file read now (again on SIGHUP).
Result<keys::AuthPolicyOptions> AuthPolicyFrom(const config::MasterConfig& cfg) {
  keys::AuthPolicyOptions policy;
  policy.auto_accept = cfg.auto_accept;
  policy.open_mode = cfg.open_mode;
  policy.autosign_timeout = cfg.autosign_timeout;
  policy.max_pending_keys = static_cast<std::size_t>(cfg.max_pending_keys);
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

}  // namespace

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
  // With etcd nothing is shared through a folder: shared_pki is this master's own pki_dir
  // (its published CURVE key and key-sync stamps stay local; peers read the member records).
  const bool on_etcd = in_cluster && cfg.cluster_backend == "etcd";
  impl->shared_pki = in_cluster && !on_etcd ? std::filesystem::path(cfg.cluster_pki_dir) : pki_dir;
  std::string aes_key_string;
  std::optional<cluster::CurveKeyPair> curve;
  if (in_cluster) {
    // Every minion-facing key is the cluster's (salt-wire 10.3): all masters look alike.
    // With etcd, masters are names and their addresses are data in their member records.
    if (!on_etcd) {
      HALITE_RETURN_IF_ERROR(
          cluster::CheckClusterIdentity(cfg.id, cfg.interface, cfg.cluster_peers));
    } else if (!cluster::IsValidPeerId(cfg.id)) {
      return Error::InvalidArgument("id: '" + cfg.id + "' cannot name a cluster member");
    }
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(impl->shared_pki, 0700));
    HALITE_ASSIGN_OR_RETURN(auto cluster_keys, stores::OpenClusterKeyPair(cfg));
    HALITE_ASSIGN_OR_RETURN(cluster::ClusterKeyPair cluster_pair,
                            cluster_keys->LoadOrCreate(cfg.keysize, cfg.id));
    if (!on_etcd) {
      HALITE_RETURN_IF_ERROR(cluster::PublishMasterKey(impl->shared_pki, cfg.id, master_pub));
    }
    HALITE_ASSIGN_OR_RETURN(impl->cluster_aes, stores::OpenClusterAes(cfg));
    HALITE_ASSIGN_OR_RETURN(aes_key_string, impl->cluster_aes->LoadOrCreate());
    HALITE_ASSIGN_OR_RETURN(curve,
                            cluster::LoadOrCreateCurveKeys(pki_dir, impl->shared_pki, cfg.id));
    HALITE_ASSIGN_OR_RETURN(impl->quorum_views, stores::OpenQuorumViews(cfg));
    impl->signing_key = cluster_pair.key;
    impl->ctx.pub_key_text = wire::CleanKey(cluster_pair.pub_text);
  } else {
    // A fresh AES key at every start (as Salt): minions re-authenticate on their first
    // failed decrypt, and the publish serial can safely start at 1 again.
    aes_key_string = wire::Crypticle::GenerateKeyString();
  }

  HALITE_ASSIGN_OR_RETURN(impl->key_sync,
                          keys::GroupSync::Open({impl->shared_pki, "key-sync", nullptr}));
  HALITE_ASSIGN_OR_RETURN(impl->key_store,
                          stores::OpenMinionKeys(impl->config, impl->key_sync.get()));
  impl->minion_keys = std::make_unique<master::MinionKeys>(*impl->key_store);
  // Masters of a cluster share session keys (files in the shared cachedir, or etcd); a single
  // master is the only reader, so memory is enough (and saves an inode per minion); it only
  // takes over session files salt-master left (docs/migrate.md).
  HALITE_ASSIGN_OR_RETURN(impl->session_keys,
                          stores::OpenSessionKeys(cfg, master::MinionKeys::kDefaultCapacity));
  auto aes = wire::Crypticle::FromKeyString(aes_key_string);
  if (!aes.ok()) return aes.error().WithContext("cluster AES key");
  impl->aes = std::make_unique<master::AesKeyRing>(std::move(*aes));
  HALITE_ASSIGN_OR_RETURN(impl->minion_data, stores::OpenMinionData(cfg, /*feed=*/true));
  impl->renderer = MakeRendererPool(cfg);

  jobs::JobCacheRegistry registry;
  jobs::RegisterBuiltinJobCaches(registry);
  YAML::Node job_cache_options = cfg.job_cache;
  HALITE_ASSIGN_OR_RETURN(
      impl->job_cache, registry.Create(cfg.master_job_cache,
                                       jobs::JobCacheContext{cachedir, cfg.id}, job_cache_options));
  HALITE_ASSIGN_OR_RETURN(impl->ctx.root_key, LoadOrCreateRootKey(cachedir));
  {
    HALITE_ASSIGN_OR_RETURN(auth::AuthOptions auth_options,
                            auth::ParseAuthOptions(cfg.source, cfg.cachedir));
    HALITE_ASSIGN_OR_RETURN(impl->authenticator,
                            auth::Authenticator::Open(std::move(auth_options)));
    impl->ctx.authenticator = impl->authenticator.get();
    HALITE_ASSIGN_OR_RETURN(impl->ctx.user_keys,
                            auth::PrepareUserKeys(impl->authenticator->options(), cachedir));
  }
  // publisher_acl's users run the CLI as themselves: they must reach their key file and the
  // sockets. The directories become searchable, not listable (0711); the request socket
  // (every request still needs a key, as on ret_port) and the event bus (where the CLI
  // follows its jobs) become 0666 (docs/security.md).
  const bool local_users = !impl->ctx.user_keys.empty();
  if (local_users) {
    for (const auto& dir : {cachedir, sock_dir}) {
      if (::chmod(dir.c_str(), 0711) != 0) {
        return keys::ErrnoError(errno, "publisher_acl: chmod 0711 " + dir.string());
      }
    }
  }

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
  pub_options.port.endpoint = TcpEndpoint(cfg.interface, cfg.publish_port);
  pub_options.event_socket_path = (sock_dir / "halite_event_pub.ipc").string();
  pub_options.event_endpoint = "ipc://" + pub_options.event_socket_path;
  if (local_users) pub_options.event_socket_mode = 0666;
  pub_options.port.sndhwm = cfg.pub_hwm;
  pub_options.port.backlog = cfg.zmq_backlog;
  pub_options.port.ipv6 = cfg.ipv6;
  pub_options.port.tcp_keepalive = cfg.tcp_keepalive ? 1 : 0;
  pub_options.port.tcp_keepalive_idle = cfg.tcp_keepalive_idle;
  pub_options.port.tcp_keepalive_cnt = cfg.tcp_keepalive_cnt;
  pub_options.port.tcp_keepalive_intvl = cfg.tcp_keepalive_intvl;
  pub_options.sign_pub_messages = cfg.sign_pub_messages;
  HALITE_ASSIGN_OR_RETURN(pub_options.sig_hash, wire::ParseSigAlgo(cfg.publish_signing_algorithm));
  pub_options.with_serial = cfg.cluster_id.empty();
  pub_options.replay = cfg.publish_replay;
  pub_options.replay_options.default_window = cfg.timeout;
  pub_options.replay_options.grace = cfg.publish_replay_grace;
  pub_options.replay_options.max_window = std::chrono::seconds(kMaxForwardedPublishAgeSeconds);
  impl->publisher = std::make_unique<master::Publisher>(
      impl->zmq_context, *impl->publisher_loop, *impl->aes, *impl->signing_key, pub_options);

  if (in_cluster) HALITE_RETURN_IF_ERROR(impl->WireCluster(*curve));

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
  ctx.auth_replies = &impl->auth_replies;
  impl->event_limits = std::make_unique<master::EventRateLimiter>(cfg.minion_events_per_second,
                                                                  cfg.minion_events_burst);
  ctx.event_limits = impl->event_limits.get();
  ctx.recent_jobs = &impl->recent_jobs;
  ctx.presence = &impl->presence;
  ctx.file_hashes = &impl->file_hashes;
  // Requests waiting for their minion's slot count against a quarter of the queue's bytes.
  impl->minion_slots = std::make_unique<master::MinionSlots>(
      static_cast<std::size_t>(cfg.minion_requests_running),
      static_cast<std::size_t>(cfg.minion_requests_waiting),
      static_cast<std::size_t>(cfg.request_queue_max_bytes / 4),
      [&workers = *impl->workers](std::function<void()> task) { workers.Post(std::move(task)); });
  ctx.minion_slots = impl->minion_slots.get();
  ctx.key_counts = &impl->key_counts;
  impl->MakeHealthChecker();
  ctx.storage_lost = &impl->health->storage_lost();
  ctx.leaving = &impl->leaving;
  if (!cfg.peer_run.empty()) ctx.peer_runner = MakePeerRunner(cfg);

  master::RequestServerOptions req_options;
  const std::string req_ipc = (sock_dir / "halite_req.ipc").string();
  req_options.endpoints = {TcpEndpoint(cfg.interface, cfg.ret_port), "ipc://" + req_ipc};
  req_options.ipc_paths = {req_ipc};
  if (local_users) req_options.ipc_mode = 0666;
  req_options.max_request_bytes = cfg.max_request_bytes;
  req_options.max_queued = static_cast<std::size_t>(cfg.request_queue_max);
  req_options.max_queued_bytes = cfg.request_queue_max_bytes;
  req_options.backlog = cfg.zmq_backlog;
  req_options.ipv6 = cfg.ipv6;
  MasterContext* ctx_ptr = &impl->ctx;
  impl->request_server = std::make_unique<master::RequestServer>(
      impl->zmq_context, *impl->request_loop, *impl->workers,
      [ctx_ptr](std::string body, master::RequestServer::Reply reply,
                std::chrono::steady_clock::time_point received, std::string peer) {
        master::HandleRequest(*ctx_ptr, std::move(body), std::move(reply), received,
                              std::move(peer));
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
    impl_->StartStorageScan();
    if (impl_->config.cluster_backend == "etcd") {
      impl_->membership->SetLeaveHandler(
          [raw = impl_.get()](const cluster::LeaveRequest& r) { raw->OnLeaveRequested(r); });
      HALITE_RETURN_IF_ERROR(impl_->membership->Start(cluster::PeerLinksFollowing(*impl_->peers)));
    } else {
      // The peer channel has its configured peers already: nothing to follow.
      HALITE_RETURN_IF_ERROR(impl_->membership->Start(nullptr));
    }
  }
  HALITE_RETURN_IF_ERROR(impl_->request_server->Start());
  Impl* raw = impl_.get();
  raw->health->Start();
  if (impl_->config.health_port != 0) {
    impl_->health_server = std::make_unique<cluster::HealthServer>(
        impl_->config.interface, impl_->config.health_port, [raw] { return raw->health->Report(); },
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
      if (impl.membership) impl.workers->Post([&impl] { impl.RefreshTreeDigests(); });
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
        // past publish_session) and announces it; every master also re-reads the key in
        // case an announcement was missed.
        auto shared = impl.cluster_aes->Read();
        std::optional<std::string> rotated;
        if (forced) {
          auto r = impl.cluster_aes->Rotate(impl.config.id, std::nullopt);
          if (r.ok()) {
            rotated = *r;
          } else {
            spdlog::error(
                "the rotation the drop file asked for did not happen: {} (write "
                "the drop file again)",
                r.error().ToString());
          }
        } else if (shared.ok() && shared->age >= impl.config.publish_session) {
          auto r = impl.cluster_aes->Rotate(impl.config.id, impl.config.publish_session);
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
        if (!shared.ok()) {
          // Once a minute at most: etcd or the shared folder away fails every loop.
          static LogLimiter limiter(std::chrono::minutes(1));
          if (auto held_back = limiter.Pass()) {
            spdlog::error("cannot read the cluster AES key: {}{}", shared.error().ToString(),
                          SuppressedSuffix(*held_back));
          }
        } else if (shared->key != impl.aes->Current()->key_string()) {
          impl.aes->Rotate(*wire::Crypticle::FromKeyString(shared->key));
          spdlog::warn("Rotating cluster AES key (changed in {})", impl.cluster_aes->Where());
        }
      });
      // What a burst freed (a storm's sign-in connections, a job's returns) back to the
      // kernel: glibc keeps it resident otherwise. On this thread, which has nothing else to
      // do until the next round; it takes ~21 ms at 9,900 minions (bench/run), each arena's
      // lock held in turn, so a worker's allocation may wait that long once a round.
      const HeapTrim trim = TrimHeap();
      if (trim.resident_before > trim.resident_after) {
        impl.heap_released_bytes += trim.resident_before - trim.resident_after;
      }
      impl.heap_trim_us += static_cast<std::uint64_t>(trim.took.count());
      impl.heap_trims++;
      spdlog::debug("heap trim: resident {} KiB -> {} KiB in {} us", trim.resident_before / 1024,
                    trim.resident_after / 1024, trim.took.count());
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
  impl.StopLeaving();
  if (impl.membership) impl.membership->Stop();  // deregisters: the others close their links
  if (impl.health) impl.health->Stop();
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
