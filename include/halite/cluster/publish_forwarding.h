// Publish forwarding between the masters of a cluster (salt-wire 10.6, but out of band: over
// the peer channel, never via an event a minion could forge). A publish made on one master
// goes, once, to every peer, which sends it to its own minions; each master publishes a jid
// once however it arrives (its own publish, a peer's forward, or the job cache scan,
// master/job_cache_scan.h, which shares the set of jids published here).
//
// A forward carries the time it was sent; one older than `max_age` is dropped (counted): a
// peer that was away for longer would otherwise start jobs whose callers gave up long ago.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "halite/common/recent_set.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::cluster {

class PeerChannel;

struct PublishForwarderOptions {
  std::chrono::seconds max_age{120};
};

class PublishForwarder {
 public:
  // Publishes a load that a peer forwarded to this master's minions.
  using Deliver = std::function<void(const std::string& jid, const wire::Value& load)>;
  // `peers` and `published` (the jids published here) must outlive this. `deliver` is called
  // on the thread that handles peer messages.
  PublishForwarder(PeerChannel& peers, RecentSet& published, Deliver deliver,
                   PublishForwarderOptions options = {});

  // This master's publish: remembered and queued once for every peer. An error when a peer's
  // publish queue is full (it is down or slow): the caller then refuses the job, so that it
  // runs nowhere rather than on some masters' minions only.
  Status Forward(const wire::Value& pub_load);
  // A peer's "publish" message (its payload): dropped when malformed or too old, ignored when
  // the jid was published here already, else remembered and delivered.
  void OnPeerPublish(const std::string& peer, const std::string& payload);

  std::chrono::seconds max_age() const { return options_.max_age; }
  std::uint64_t forwarded() const { return forwarded_.load(); }  // delivered from peers
  std::uint64_t stale_dropped() const { return stale_dropped_.load(); }

 private:
  PeerChannel& peers_;
  RecentSet& seen_;
  const Deliver deliver_;
  const PublishForwarderOptions options_;
  std::atomic<std::uint64_t> forwarded_{0};
  std::atomic<std::uint64_t> stale_dropped_{0};
};

}  // namespace halite::cluster
