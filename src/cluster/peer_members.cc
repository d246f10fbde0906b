// PeerChannel: peers added and removed at runtime (cluster_backend: etcd). A removed peer
// keeps its slot (indices stay valid in every posted task and socket watch), marked removed;
// adding the same id again reuses it.
#include <spdlog/spdlog.h>

#include "peer_channel_impl.h"

namespace halite::cluster {

using namespace peer_internal;

void PeerChannel::Impl::AddPeer(PeerSpec peer, std::string key) {
  if (closed_) return;
  loop_.Post([self = shared_from_this(), peer = std::move(peer), key = std::move(key)]() mutable {
    if (!self->closed_) self->AddPeerOnLoop(std::move(peer), std::move(key));
  });
}

void PeerChannel::Impl::RemovePeer(const std::string& id) {
  if (closed_) return;
  loop_.Post([self = shared_from_this(), id] {
    if (!self->closed_) self->RemovePeerOnLoop(id);
  });
}

void PeerChannel::Impl::AddPeerOnLoop(PeerSpec peer, std::string key) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  auto parsed = ParseCurvePublicKey(key);
  if (!IsValidPeerId(peer.id) || peer.id == options_.self_id || peer.endpoint.empty() ||
      !parsed.ok()) {
    spdlog::error("peer channel: cannot add peer '{}' at '{}': bad id, endpoint or CURVE key",
                  peer.id, peer.endpoint);
    return;
  }
  auto it = index_by_id_.find(peer.id);
  std::size_t i;
  if (it != index_by_id_.end()) {
    i = it->second;
    Link& link = links_[i];
    const bool reopen = link.removed || link.endpoint != peer.endpoint;
    link.removed = false;
    link.endpoint = peer.endpoint;
    {
      std::lock_guard lock(stats_mu_);
      listed_[i] = true;
      stats_[i].endpoint = peer.endpoint;
    }
    if (reopen) link.server_key.clear();  // ApplyKey then makes a new socket
  } else {
    // Publishes already queued in inbox_ reserved room for the existing links only: they go
    // out to those now, and the new link's reservations start at zero with it.
    std::vector<Incoming> batch;
    {
      std::lock_guard lock(inbox_mu_);
      batch.swap(inbox_);
      publish_held_.push_back(0);
    }
    Deliver(batch);
    i = links_.size();
    Link link;
    link.id = peer.id;
    link.endpoint = peer.endpoint;
    link.runtime = true;
    links_.push_back(std::move(link));
    inbound_.emplace_back();
    index_by_id_.emplace(peer.id, i);
    PeerLinkStatus status;
    status.id = peer.id;
    status.endpoint = peer.endpoint;
    std::lock_guard lock(stats_mu_);
    stats_.push_back(std::move(status));
    listed_.push_back(true);
  }
  spdlog::info("peer channel: peer {} at {} joined", peer.id, peer.endpoint);
  ApplyKey(i, KeyReading{*parsed, ""});
}

void PeerChannel::Impl::RemovePeerOnLoop(const std::string& id) {
  HALITE_DCHECK(loop_.IsCurrentThread());
  auto it = index_by_id_.find(id);
  if (it == index_by_id_.end() || links_[it->second].removed) return;
  const std::size_t i = it->second;
  Link& link = links_[i];
  if (link.watch != 0) loop_.Unwatch(link.watch);
  link.watch = 0;
  link.dealer.reset();
  link.connected = false;
  link.server_key.clear();
  link.key_problem = "left the cluster";
  link.removed = true;
  std::size_t publishes = link.out[Index(PeerClass::kPublish)].queue.size();
  for (OutStream& stream : link.out) {
    stream.Clear();
    stream.send_next = stream.next_seq;
  }
  ReleasePublishes(i, publishes);
  RebuildZapKeys();
  {
    std::lock_guard lock(stats_mu_);
    listed_[i] = false;
  }
  spdlog::info("peer channel: peer {} left; its link is closed and its key refused", id);
}

}  // namespace halite::cluster
