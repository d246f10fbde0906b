// The publish port (4505) as halite serves it: a ZMQ_STREAM socket that speaks ZMTP 3.0 to
// each subscriber itself (zmtp.h), so that what a connection may make the master keep is
// bounded: one frame of input, a flag, no subscription trie. libzmq's PUB kept every distinct
// subscription a stranger sent (docs/security.md, finding 21).
//
// - A subscription to "" (what every Salt minion and halite-minion sends) makes a connection
//   receive every publish; any other topic is counted and receives nothing (zmq_filtering is
//   not supported, as before). A connection that sends anything but a handshake and a few
//   subscriptions, a frame over the limit, or no subscription within handshake_timeout, is
//   closed and counted in refused().
// - Send() queues one shared copy of the message on every subscribed connection; one whose
//   queue holds sndhwm messages misses it (counted in dropped()), as libzmq's PUB does.
//
// Threads: created, started, used and stopped on the loop's thread (HALITE_DCHECK'ed); the
// counters may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <zmq.hpp>

#include "halite/common/logging.h"
#include "halite/common/result.h"
#include "halite/transport/zmq_loop.h"
#include "halite/transport/zmtp.h"

namespace halite::transport {

struct PubServerOptions {
  std::string endpoint;  // tcp://<interface>:<port>
  int backlog = 1000;
  bool ipv6 = false;
  int tcp_keepalive = 1;
  int tcp_keepalive_idle = 300;
  int tcp_keepalive_cnt = -1;
  int tcp_keepalive_intvl = -1;
  int sndhwm = 1000;  // messages queued per connection
  // A connection must subscribe within this (libzmq's handshake_ivl default, 30 s).
  std::chrono::milliseconds handshake_timeout{30000};
  zmtp::SubscriberLimits limits;
  // Called on the loop thread each time a connection subscribes to "" (a minion arrived).
  std::function<void()> on_subscriber;
};

class PubServer {
 public:
  PubServer(zmq::context_t& context, ZmqLoop& loop, PubServerOptions options);
  ~PubServer();
  PubServer(const PubServer&) = delete;
  PubServer& operator=(const PubServer&) = delete;

  Status Start();  // binds and watches
  void Stop();     // unwatches and closes (linger 1 s); idempotent
  // Queues `message` (one frame) on every subscribed connection; returns how many took it.
  std::size_t Send(std::string_view message);

  std::int64_t connections() const { return connections_.load(); }
  std::int64_t subscribers() const { return subscribers_.load(); }       // subscribed to ""
  std::uint64_t subscriptions() const { return subscriptions_.load(); }  // "" subscriptions
  std::uint64_t topics() const { return topics_.load(); }    // other topics: not delivered
  std::uint64_t refused() const { return refused_.load(); }  // connections closed by us
  std::uint64_t dropped() const { return dropped_.load(); }  // sends a full queue missed
  std::string_view last_endpoint() const { return last_endpoint_; }

 private:
  struct Connection {
    explicit Connection(const zmtp::SubscriberLimits& limits) : stream(limits) {}
    zmtp::SubscriberStream stream;
    std::string peer;  // address, for logs
    bool everything = false;
    bool subscribed = false;  // any subscription: the handshake deadline no longer applies
  };
  using Connections = std::unordered_map<std::string, Connection>;

  void OnReadable();
  void OnData(const std::string& id, std::string_view data, std::string peer);
  void Close(Connections::iterator it, const std::string& why);  // ends it here, counted
  void Forget(Connections::iterator it);                         // drops it from the table
  bool SendTo(const std::string& id, zmq::message_t& message);
  void SweepHandshakes();

  zmq::context_t& context_;
  ZmqLoop& loop_;
  const PubServerOptions options_;
  const std::string greeting_;  // our greeting and READY, sent on connect
  std::unique_ptr<zmq::socket_t> socket_;
  ZmqLoop::WatchId watch_ = 0;
  ZmqLoop::TimerId sweep_timer_ = 0;
  Connections connections_by_id_;
  // Connections in arrival order with their handshake deadlines.
  std::deque<std::pair<ZmqLoop::Clock::time_point, std::string>> pending_;
  std::string last_endpoint_;
  LogLimiter refusal_log_{std::chrono::seconds(10)};
  LogLimiter topic_log_{std::chrono::seconds(60)};
  std::atomic<std::int64_t> connections_{0};
  std::atomic<std::int64_t> subscribers_{0};
  std::atomic<std::uint64_t> subscriptions_{0};
  std::atomic<std::uint64_t> topics_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace halite::transport
