// The cluster side of one master (master_daemon_impl.h): publishes forwarded to every peer,
// what peers send (events, publishes, AES rotations), cluster.status and etcd membership.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "halite/cluster/shared_state.h"
#include "halite/common/logging.h"
#include "halite/jobs/jid.h"
#include "halite/version.h"
#include "halite/wire/event.h"
#include "master_daemon_impl.h"

namespace halite::daemon {

namespace {

// A publish here goes to every peer first (cluster/publish_forwarding.h), then to this
// master's minions; a peer's refusal (its queue is full) refuses the job everywhere.
class ClusterJobPublisher final : public master::JobPublisher {
 public:
  ClusterJobPublisher(master::JobPublisher& local, cluster::PublishForwarder& forwarder)
      : local_(local), forwarder_(forwarder) {}
  Status Publish(wire::Value pub_load) override {
    HALITE_RETURN_IF_ERROR(forwarder_.Forward(pub_load));
    return local_.Publish(std::move(pub_load));
  }

 private:
  master::JobPublisher& local_;
  cluster::PublishForwarder& forwarder_;
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
  peer_options.event_backlog_max_bytes = static_cast<std::size_t>(cfg.cluster_event_backlog_bytes);
  peer_options.keys = curve;
  peers =
      std::make_unique<cluster::PeerChannel>(zmq_context, *cluster_loop, std::move(peer_options));
  Impl* raw = this;
  forwarder = std::make_unique<cluster::PublishForwarder>(
      *peers, published_jids,
      [raw](const std::string& jid, const wire::Value& load) {
        // Its returns here are checked against the target (the peer saved the minions).
        raw->recent_jobs.Remember(jobs::Job{jid, load, {}});
        (void)raw->publisher->Publish(load);  // the local PUB never refuses
      },
      cluster::PublishForwarderOptions{std::chrono::seconds(kMaxForwardedPublishAgeSeconds)});
  cluster_publisher = std::make_unique<ClusterJobPublisher>(*publisher, *forwarder);
  job_cache_scan =
      std::make_unique<master::JobCacheScan>(*job_cache, *publisher, recent_jobs, published_jids);
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
  // No trees yet: reading them (a large file_roots takes a while) is the maintenance loop's
  // first round, right after start, not start-up's.
  const cluster::MemberRecord self{
      cfg.id,
      cfg.interface == "0.0.0.0" || cfg.interface == "::" ? cfg.id : cfg.interface,
      cfg.cluster_pool_port,
      cfg.publish_port,
      cfg.ret_port,
      cfg.health_port,
      curve.public_key,
      kVersion,
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count(),
      {}};
  if (cfg.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto etcd, cluster::MakeEtcdClient(stores::EtcdOptionsFor(cfg)));
    cluster::EtcdMembershipOptions members;
    members.prefix = cfg.etcd_prefix;
    members.self = self;
    membership = cluster::MakeEtcdMembership(std::move(members), std::move(etcd));
  } else {
    membership = cluster::MakeFileMembership({self, shared_pki / "members", cfg.cluster_peers});
  }
  return OkStatus();
}

void MasterDaemon::Impl::RefreshTreeDigests() {
  if (!membership) return;
  std::unique_lock lock(tree_digests_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;  // the last round is still reading the trees
  // The live config: file_roots and pillar_roots can change on SIGHUP.
  auto live = ctx.config.Get();
  membership->SetTrees(tree_digests.Compute(live->file_roots, live->pillar_roots));
}

namespace {
// "file_roots/base differs between masters: m1, m2 serve 3f2a...; m3 serves 9b1c..." for each
// tree the members do not all serve alike (a tree a member lacks counts as "none"). A member
// that has published no trees yet (it has just started) is left out.
wire::Array TreeWarnings(const std::vector<cluster::MemberRecord>& members) {
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_tree;
  for (const auto& m : members) {
    for (const auto& [tree, digest] : m.trees) by_tree[tree][digest];
  }
  for (auto& [tree, digests] : by_tree) {
    for (const auto& m : members) {
      if (m.trees.empty()) continue;
      auto it = m.trees.find(tree);
      digests[it == m.trees.end() ? "none" : it->second].push_back(m.name);
    }
    std::erase_if(digests, [](const auto& d) { return d.second.empty(); });
  }
  wire::Array warnings;
  for (const auto& [tree, digests] : by_tree) {
    if (digests.size() < 2) continue;
    std::string text = tree + " differs between masters:";
    const char* sep = " ";
    for (const auto& [digest, names] : digests) {
      text += sep;
      for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
      text += (names.size() == 1 ? " serves " : " serve ") + digest;
      sep = "; ";
    }
    warnings.emplace_back(std::move(text));
  }
  return warnings;
}
}  // namespace

void MasterDaemon::Impl::OnPeerMessage(const std::string& peer, cluster::PeerMessage message) {
  if (message.kind == "event") {
    auto event = wire::UnpackEvent(message.payload);
    if (!event.ok()) {
      spdlog::warn("peer {}: malformed event: {}", peer, event.error().message);
      return;
    }
    publisher->FireLocalOnly(std::move(event->tag), std::move(event->data));
  } else if (message.kind == "publish") {
    forwarder->OnPeerPublish(peer, message.payload);
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
    cluster_loop->RunEvery(std::chrono::milliseconds(1000), [this] {
      if (scan_queued.exchange(true)) return;  // the last one has not run yet
      workers->Post([this] {
        job_cache_scan->Run();
        scan_queued = false;
      });
    });
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
                                     {"queued_bytes", stats->queued_bytes},
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
    const auto members = membership->Members();
    for (const auto& member : members) names.push_back(wire::Value(member.name));
    status.Set("warnings", wire::Value(TreeWarnings(members)));
    const std::string problem = membership->problem();
    status.Set("members", wire::Value(std::move(names)));
    status.Set("coordination", problem.empty() ? wire::Value("ok") : wire::Value(problem));
    status.Set("membership", left ? "left" : leaving ? "leaving" : "member");
  }
  status.Set("peers", wire::Value(std::move(links)));
  if (auto quorum = health->quorum()) {
    status.Set("quorum", cluster::HealthChecker::QuorumToValue(*quorum));
  }
  status.Set("forwarded_publishes", forwarder->forwarded());
  status.Set("stale_publishes_dropped", forwarder->stale_dropped());
  status.Set("storage_publishes", job_cache_scan->published());
  status.Set("publish_replays", publisher->replays());
  status.Set("publishes_replayed", publisher->replayed());
  status.Set("aes_generation", aes->generation());
  status.Set("connected_minions", publisher->connected_subscribers());
  return status;
}

}  // namespace halite::daemon
