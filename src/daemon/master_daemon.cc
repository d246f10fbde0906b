#include "halite/daemon/master_daemon.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <deque>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/peer_channel.h"
#include "halite/cluster/shared_state.h"
#include "halite/jobs/job_cache_registry.h"
#include "halite/keys/auth_policy.h"
#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/keys/key_admin.h"
#include "halite/keys/master_keys.h"
#include "halite/master/context.h"
#include "halite/master/publisher.h"
#include "halite/master/request_server.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/event.h"

namespace halite::daemon {

using master::MasterContext;

struct MasterDaemon::Impl {
  config::MasterConfig config;
  std::unique_ptr<keys::KeyStore> key_store;
  std::unique_ptr<master::MinionKeys> minion_keys;
  std::unique_ptr<master::SessionKeys> session_keys;
  std::unique_ptr<master::AesKeyRing> aes;
  std::optional<wire::RsaPrivateKey> signing_key;
  std::unique_ptr<jobs::JobCache> job_cache;
  jobs::JidGenerator jids;
  std::unique_ptr<master::MinionData> minion_data;
  master::Counters counters;
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
  std::unique_ptr<master::JobPublisher> cluster_publisher;
  std::deque<std::string> recent_forwarded_jids;   // cluster loop only
  std::set<std::string> recent_forwarded_jid_set;  // cluster loop only
  std::atomic<std::uint64_t> forwarded_publishes{0};
  std::atomic<std::uint64_t> stale_publishes_dropped{0};

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
  const auto path = cachedir / ".root_key";
  auto existing = keys::ReadFile(path);
  if (existing.ok() && wire::Crypticle::FromKeyString(*existing).ok()) return *existing;
  std::string key = wire::Crypticle::GenerateKeyString();
  HALITE_RETURN_IF_ERROR(keys::WriteFileAtomic(path, key, 0600));
  return key;
}

// In a cluster a publish goes to this master's minions and, once, to every peer, which
// publishes it to its own minions (salt-wire 10.6, but out of band: never via an event a
// minion could forge).
class ClusterJobPublisher final : public master::JobPublisher {
 public:
  ClusterJobPublisher(master::JobPublisher& local, cluster::PeerChannel& peers)
      : local_(local), peers_(peers) {}
  void Publish(wire::Value pub_load) override {
    auto ts = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    peers_.Broadcast(cluster::PeerMessage{
        "publish", wire::Pack(wire::Value::MapOf({{"ts", static_cast<long long>(ts)},  // NOLINT
                                                  {"load", pub_load}}),
                              wire::Packing::kBinType)});
    local_.Publish(std::move(pub_load));
  }

 private:
  master::JobPublisher& local_;
  cluster::PeerChannel& peers_;
};

// Forwarded publishes older than this are not sent to minions: a peer that was away for
// longer would otherwise start jobs whose callers gave up long ago.
constexpr std::int64_t kMaxForwardedPublishAgeSeconds = 120;
constexpr std::size_t kRecentJidsKept = 10000;

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
  for (const auto& [dir, mode] :
       {std::pair{pki_dir, 0700}, std::pair{cachedir, 0755}, std::pair{sock_dir, 0755}}) {
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
    HALITE_RETURN_IF_ERROR(cluster::CheckClusterIdentity(cfg.id, cfg.interface, cfg.cluster_peers));
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

  HALITE_ASSIGN_OR_RETURN(impl->key_store, keys::FsKeyStore::Open(impl->shared_pki));
  impl->minion_keys = std::make_unique<master::MinionKeys>(*impl->key_store);
  impl->session_keys =
      std::make_unique<master::SessionKeys>(cachedir / "sessions", cfg.publish_session);
  auto aes = wire::Crypticle::FromKeyString(aes_key_string);
  if (!aes.ok()) return aes.error().WithContext("cluster AES key");
  impl->aes = std::make_unique<master::AesKeyRing>(std::move(*aes));
  impl->minion_data = std::make_unique<master::MinionData>(cachedir);

  jobs::JobCacheRegistry registry;
  jobs::RegisterBuiltinJobCaches(registry);
  YAML::Node job_cache_options = cfg.job_cache;
  HALITE_ASSIGN_OR_RETURN(
      impl->job_cache, registry.Create(cfg.master_job_cache,
                                       jobs::JobCacheContext{cachedir, cfg.id}, job_cache_options));
  HALITE_ASSIGN_OR_RETURN(impl->ctx.root_key, LoadOrCreateRootKey(cachedir));

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

  impl->zmq_context.set(zmq::ctxopt::max_sockets, 65535);
  impl->zmq_context.set(zmq::ctxopt::io_threads, 1);
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
  impl->publisher = std::make_unique<master::Publisher>(impl->zmq_context, *impl->publisher_loop,
                                                        *impl->aes, master_key, pub_options);

  MasterContext& ctx = impl->ctx;
  ctx.config = &impl->config;
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
  ctx.auth_policy = std::move(policy);
  ctx.counters = &impl->counters;

  master::RequestServerOptions req_options;
  const std::string req_ipc = (sock_dir / "halite_req.ipc").string();
  req_options.endpoints = {TcpEndpoint(cfg.interface, cfg.ret_port), "ipc://" + req_ipc};
  req_options.ipc_paths = {req_ipc};
  req_options.max_request_bytes = cfg.max_request_bytes;
  req_options.backlog = cfg.zmq_backlog;
  req_options.ipv6 = cfg.ipv6;
  MasterContext* ctx_ptr = &impl->ctx;
  impl->request_server = std::make_unique<master::RequestServer>(
      impl->zmq_context, *impl->request_loop, *impl->workers,
      [ctx_ptr](std::string body, master::RequestServer::Reply reply) {
        master::HandleRequest(*ctx_ptr, std::move(body), std::move(reply));
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
  }
  HALITE_RETURN_IF_ERROR(impl_->request_server->Start());
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
      // Maintenance: job retention and the rotation drop file (salt-wire 5.1, 9.5).
      impl.workers->Post([&impl] {
        if (impl.config.keep_jobs_seconds.count() > 0) {
          auto removed = impl.job_cache->CleanOld(impl.config.keep_jobs_seconds);
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

void MasterDaemon::Reload() {
  spdlog::info("SIGHUP: configuration reload is limited to the log level in this version");
}

void MasterDaemon::Stop() {
  auto& impl = *impl_;
  if (impl.stopped) return;
  impl.stopped = true;
  if (impl.request_server) impl.request_server->StopIntake();
  if (impl.workers) impl.workers->Shutdown();
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
