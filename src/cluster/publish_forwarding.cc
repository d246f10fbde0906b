#include "halite/cluster/publish_forwarding.h"

#include <spdlog/spdlog.h>

#include "halite/cluster/peer_channel.h"

namespace halite::cluster {

namespace {

std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PublishForwarder::PublishForwarder(PeerChannel& peers, RecentSet& published, Deliver deliver,
                                   PublishForwarderOptions options)
    : peers_(peers), seen_(published), deliver_(std::move(deliver)), options_(options) {}

Status PublishForwarder::Forward(const wire::Value& pub_load) {
  if (const std::string* jid = pub_load.FindStr("jid")) seen_.Insert(*jid);
  return peers_.BroadcastPublish(PeerMessage{
      "publish",
      wire::Pack(wire::Value::MapOf({{"ts", static_cast<long long>(UnixNow())},  // NOLINT
                                     {"load", pub_load}}),
                 wire::Packing::kBinType)});
}

void PublishForwarder::OnPeerPublish(const std::string& peer, const std::string& payload) {
  auto body = wire::Unpack(payload);
  const wire::Value* load = body.ok() ? body->Find("load") : nullptr;
  const std::string* jid = load ? load->FindStr("jid") : nullptr;
  if (!jid) {
    spdlog::warn("peer {}: malformed publish", peer);
    return;
  }
  auto ts = body->Find("ts") ? body->Find("ts")->int64() : std::nullopt;
  if (!ts || UnixNow() - *ts > options_.max_age.count()) {
    stale_dropped_++;
    spdlog::warn("peer {}: publish of {} is too old to send to minions; dropped", peer, *jid);
    return;
  }
  // Resent by the peer, or published here already from the job cache.
  if (!seen_.Insert(*jid)) return;
  forwarded_++;
  spdlog::debug("publishing {} forwarded by peer {}", *jid, peer);
  deliver_(*jid, *load);
}

}  // namespace halite::cluster
