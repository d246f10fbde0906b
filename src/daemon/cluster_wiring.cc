// The cluster side of one master (master_daemon_impl.h): publishes forwarded to every peer,
// what peers send (events, publishes, AES rotations), cluster.status and etcd membership.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "halite/cluster/shared_state.h"
#include "halite/common/logging.h"
#include "halite/jobs/jid.h"
#include "halite/master/publish_job.h"
#include "halite/master/publish_replay.h"
#include "halite/version.h"
#include "halite/wire/event.h"
#include "master_daemon_impl.h"

namespace halite::daemon {

namespace {

// The job cache scan (ScanJobCacheForJobs): jobs saved in the last minute, and at least 2 s
// ago (a forward from a live peer takes milliseconds; the scan is for the ones that never
// come), at most 1,000 a round.
constexpr auto kStorageScanPeriod = std::chrono::seconds(1);
constexpr auto kStorageScanWindow = std::chrono::seconds(60);
constexpr auto kStorageScanSettle = std::chrono::seconds(2);
constexpr std::size_t kStorageScanMax = 1000;

// In a cluster a publish goes to this master's minions and, once, to every peer, which
// publishes it to its own minions (salt-wire 10.6, but out of band: never via an event a
// minion could forge).
class ClusterJobPublisher final : public master::JobPublisher {
 public:
  ClusterJobPublisher(master::JobPublisher& local, cluster::PeerChannel& peers, SeenJids& seen)
      : local_(local), peers_(peers), seen_(seen) {}
  Status Publish(wire::Value pub_load) override {
    if (const std::string* jid = pub_load.FindStr("jid")) seen_.Insert(*jid);
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
  SeenJids& seen_;
};

}  // namespace

Status MasterDaemon::Impl::WireCluster(const cluster::CurveKeyPair& curve) {
  const auto& cfg = config;
  cluster_loop = std::make_unique<transport::ZmqLoop>("cluster");
  cluster::PeerChannelOptions peer_options;
  peer_options.self_id = cfg.id;
  peer_options.bind_endpoint = cluster::TcpEndpoint(cfg.interface, cfg.cluster_pool_port);
  if (cfg.cluster_backend != "etcd") {
    for (const auto& peer : cfg.cluster_peers) {
      peer_options.peers.push_back({peer, cluster::TcpEndpoint(peer, cfg.cluster_pool_port)});
    }
  }
  peer_options.cluster_pki_dir = shared_pki;
  peer_options.keys = curve;
  peers =
      std::make_unique<cluster::PeerChannel>(zmq_context, *cluster_loop, std::move(peer_options));
  cluster_publisher = std::make_unique<ClusterJobPublisher>(*publisher, *peers, seen_jids);
  Impl* raw = this;
  // Every event fired here goes to every peer; events from peers are only published
  // locally, so nothing is forwarded twice and loops cannot form.
  publisher->AddEventObserver([raw](const std::string& tag, const wire::Value& data) {
    if (tag.rfind("halite/probe/", 0) == 0) return;
    raw->peers->Broadcast(cluster::PeerMessage{"event", wire::PackEvent(tag, data)});
  });
  peers->SetHandler([raw](const std::string& peer, cluster::PeerMessage message) {
    raw->OnPeerMessage(peer, std::move(message));
  });
  ctx.cluster_status = [raw]() { return raw->ClusterStatus(); };
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
                    curve.public_key,
                    kVersion,
                    std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()};
    membership = cluster::MakeEtcdMembership(std::move(members), std::move(etcd));
  }
  return OkStatus();
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
    // Resent by the peer, or published here already from the job cache.
    if (!seen_jids.Insert(*jid)) return;
    forwarded_publishes++;
    spdlog::debug("publishing {} forwarded by peer {}", *jid, peer);
    // Its returns here are checked against the target (the peer saved the expected minions).
    recent_jobs.Remember(jobs::Job{*jid, *load, {}});
    (void)publisher->Publish(*load);  // the local PUB never refuses
  } else if (message.kind == "rotate") {
    workers->Post([this] {
      auto key = cluster_aes->Read();
      if (!key.ok()) {
        spdlog::error("cluster AES rotation announced but unreadable: {}", key.error().ToString());
        return;
      }
      if (key->key != aes->Current()->key_string()) {
        aes->Rotate(*wire::Crypticle::FromKeyString(key->key));
        spdlog::warn("Rotating cluster AES key (announced by a peer)");
      }
    });
  } else {
    spdlog::warn("peer {}: unknown message kind '{}'", peer, message.kind);
  }
}

void MasterDaemon::Impl::StartStorageScan() {
  cluster_loop->Post([this] {
    cluster_loop->RunEvery(
        std::chrono::duration_cast<std::chrono::milliseconds>(kStorageScanPeriod),
        [this] { ScanJobCacheForJobs(); });
  });
}

// A publish that no peer forwarded (the link to the master that published it is cut, or was
// down for longer than its backlog holds) still reaches this master's minions: the job is in
// the shared job cache, saved before it was published anywhere (docs/failure-modes.md).
void MasterDaemon::Impl::ScanJobCacheForJobs() {
  if (storage_scan_running.exchange(true)) return;  // the last scan is still running
  workers->Post([this] {
    const auto now = std::chrono::system_clock::now();
    const std::string settled = jobs::GenerateJid(now - kStorageScanSettle);
    auto jids = job_cache->JidsSince(jobs::GenerateJid(now - kStorageScanWindow), kStorageScanMax);
    if (!jids.ok()) {
      // Every scan fails while the job cache is down: once a minute is enough to say so.
      static LogLimiter limiter(std::chrono::minutes(1));
      if (auto held_back = limiter.Pass()) {
        spdlog::warn("job cache scan for unforwarded jobs: {}{}", jids.error().message,
                     SuppressedSuffix(*held_back));
      }
    } else {
      // A restarted master publishes the last minute's jobs too: a peer that forwarded a job
      // to its earlier self (acknowledged, then it died) does not send it again, and the
      // minions that move here would miss it. Minions that returned are left out (as in a
      // replay), and the others drop a jid they already have.
      for (const std::string& jid : *jids) {
        if (jid >= settled) break;  // sorted: the rest are too new
        if (seen_jids.Contains(jid)) continue;
        auto job = job_cache->LoadJob(jid);
        if (!job.ok()) continue;  // not readable yet: the next scan tries again
        wire::Value pub = master::MinionPublishLoad(job->load);
        std::set<std::string, std::less<>> returned;
        if (auto returns = job_cache->LoadReturns(jid); returns.ok()) {
          for (const auto& r : *returns) returned.insert(r.minion_id);
        }
        const bool all_returned =
            !job->minions.empty() &&
            std::all_of(job->minions.begin(), job->minions.end(),
                        [&](const std::string& id) { return returned.count(id) != 0; });
        if (!seen_jids.Insert(jid)) continue;  // a forward arrived meanwhile
        if (all_returned) continue;            // nothing left to deliver
        if (!returned.empty()) {
          if (auto tgt = master::TargetExcluding(pub, returned)) {
            pub.Set("tgt", std::move(*tgt));
            pub.Set("tgt_type", "compound");
          }
        }
        storage_publishes++;
        spdlog::warn("publishing {} from the job cache: no peer forwarded it here", jid);
        recent_jobs.Remember(*job);  // its returns here are checked against its minions
        (void)publisher->Publish(std::move(pub));
      }
    }
    storage_scan_running = false;
  });
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
    status.Set("membership", left ? "left" : leaving ? "leaving" : "member");
  }
  status.Set("peers", wire::Value(std::move(links)));
  {
    std::lock_guard lock(health_mu);
    if (!quorum_decision.side.empty()) status.Set("quorum", QuorumToValue(quorum_decision));
  }
  status.Set("forwarded_publishes", forwarded_publishes.load());
  status.Set("stale_publishes_dropped", stale_publishes_dropped.load());
  status.Set("storage_publishes", storage_publishes.load());
  status.Set("publish_replays", publisher->replays());
  status.Set("publishes_replayed", publisher->replayed());
  status.Set("aes_generation", aes->generation());
  status.Set("connected_minions", publisher->connected_subscribers());
  return status;
}

}  // namespace halite::daemon
