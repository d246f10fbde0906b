// The publisher: sole owner of the minion-facing publish port (transport::PubServer, ZMTP to
// each subscriber; publish_port) and of the local
// event bus socket (a ZeroMQ PUB on ipc://<sock_dir>/halite_event_pub.ipc, mode 0600, 0666
// with publisher_acl; one
// frame per event, the packed Salt event, so subscribers filter by tag prefix).
// Both sockets live on one ZmqLoop ("publisher"); every public method is thread-safe and
// only posts to that loop. Publishing encrypts with the AES key ring and signs the
// ciphertext with the master (or cluster) key (salt-wire 4.8).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/common/result.h"
#include "halite/master/keyring.h"
#include "halite/master/publish_replay.h"
#include "halite/master/services.h"
#include "halite/transport/pub_server.h"
#include "halite/transport/zmq_loop.h"
#include "halite/wire/rsa.h"

namespace halite::master {

// The largest frame a subscriber may send on the publish port; a larger one drops its
// connection. Subscriptions are all a subscriber sends ("" from a minion; a Salt topic with
// zmq_filtering is 41 bytes).
inline constexpr std::int64_t kMaxSubscriptionBytes = 1024;

struct PublisherOptions {
  // The publish port: endpoint tcp://<interface>:<publish_port>, sndhwm = pub_hwm, backlog,
  // ipv6, keepalive. Its frame limit (kMaxSubscriptionBytes) and on_subscriber are set here.
  transport::PubServerOptions port;
  std::string event_endpoint;       // ipc://<sock_dir>/halite_event_pub.ipc
  std::string event_socket_path;    // the file of event_endpoint, for chmod
  mode_t event_socket_mode = 0600;  // 0666 with publisher_acl (its users follow their jobs)
  bool sign_pub_messages = true;
  wire::SigHash sig_hash = wire::SigHash::kSha1;
  bool with_serial = true;  // false in cluster mode (salt-wire 10.3)
  // Re-publish live jobs when minions subscribe (publish_replay.h): one "" subscription per
  // minion connection.
  bool replay = true;
  PublishReplayOptions replay_options;
};

class Publisher final : public EventSink, public JobPublisher {
 public:
  // Called on the publisher loop for every event fired here (cluster forwarding).
  using EventObserver = std::function<void(const std::string& tag, const wire::Value& data)>;

  Publisher(zmq::context_t& context, transport::ZmqLoop& loop, AesKeyRing& aes,
            wire::RsaPrivateKey signing_key, PublisherOptions options);

  // Binds both sockets on the loop thread and waits for the outcome. The loop must be running.
  Status Start();

  // EventSink:
  void Fire(std::string tag, wire::Value data) override;
  // JobPublisher:
  Status Publish(wire::Value pub_load) override;  // always OK: the PUB socket never refuses

  // Publishes an already-stamped event to local subscribers only (events from peers).
  void FireLocalOnly(std::string tag, wire::Value data);
  // Loop thread or before Start.
  void AddEventObserver(EventObserver observer);

  std::uint64_t published() const { return published_.load(); }
  std::uint64_t events_fired() const { return events_.load(); }
  // Connections subscribed to every publish right now (minions connected here).
  std::int64_t connected_subscribers() const;
  // TCP connections on the publish port, subscribed or not.
  std::int64_t publish_port_connections() const;
  // Subscriptions to a topic other than "", which get nothing (zmq_filtering minions).
  std::uint64_t topic_subscriptions() const;
  // Connections closed for what they sent (or did not send) on the publish port.
  std::uint64_t refused_subscribers() const;
  // Publishes a connection missed because its queue was full.
  std::uint64_t dropped_publishes() const;
  std::uint64_t replays() const { return replays_.load(); }    // replay rounds
  std::uint64_t replayed() const { return replayed_.load(); }  // publishes re-sent

 private:
  void SendEvent(const std::string& tag, const wire::Value& data);
  void NoteReturn(std::string_view tag);
  bool SendOnLoop(wire::Value load);  // encrypt, sign, send; false on failure (logged)
  void OnSubscriber();                // a connection subscribed to ""
  void ReplayOnLoop();

  zmq::context_t& context_;
  transport::ZmqLoop& loop_;
  AesKeyRing& aes_;
  const wire::RsaPrivateKey signing_key_;
  const PublisherOptions options_;
  std::unique_ptr<transport::PubServer> pub_;     // loop thread only (counters: any)
  std::unique_ptr<zmq::socket_t> events_socket_;  // loop thread only
  std::optional<PublishReplay> replay_;           // loop thread only; set when options_.replay
  transport::ZmqLoop::TimerId replay_timer_ = 0;
  std::vector<EventObserver> observers_;  // loop thread only
  std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> replays_{0};
  std::atomic<std::uint64_t> replayed_{0};
};

}  // namespace halite::master
