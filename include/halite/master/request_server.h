// The request server: sole owner of the ROUTER socket that minions and CLIs talk to
// (tcp ret_port, plus an ipc endpoint in sock_dir for local tools). It runs on its own
// ZmqLoop ("req-server"), hands every request body to the WorkerPool and sends each reply with
// the routing envelope it came with (REQ semantics: every request is answered, errors too).
// Oversized frames are answered with "bad load" without being handed to workers; when the
// workers' queue is full, new requests are shed (dropped unanswered and counted). A handler
// that throws costs its own request, never the process.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/common/logging.h"
#include "halite/common/result.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"

namespace halite::master {

struct RequestServerOptions {
  std::vector<std::string> endpoints;  // tcp://ip:port, ipc://path
  std::vector<std::string> ipc_paths;  // chmod ipc_mode after bind
  // 0666 when publisher_acl lets local users other than the master's publish (each request
  // still needs a key); 0600 otherwise.
  mode_t ipc_mode = 0600;
  std::size_t max_request_bytes = 100u << 20;
  int backlog = 1000;
  bool ipv6 = false;
  int tcp_keepalive = 1;
  int tcp_keepalive_idle = 300;
  // Requests read but not yet picked up by a worker; beyond either bound a new request is
  // dropped unanswered (its sender times out and retries) and counted in shed().
  std::size_t max_queued = 20000;
  std::size_t max_queued_bytes = std::size_t{1} << 30;
  // Replies queued for one connection that is not reading them (ZMQ_SNDHWM). A REQ peer has
  // one reply in flight and a halite-minion's DEALER a few (its retries); a peer that sends
  // and never reads made libzmq keep every reply when this was unbounded (finding 22). Past
  // it a reply is dropped and counted in unread_dropped().
  int replies_queued_per_peer = 8;
};

class RequestServer {
 public:
  // Exactly-once reply: thread-safe, callable from any thread, at any later time.
  using Reply = std::function<void(std::string body)>;
  // Runs on a worker thread.
  // `received`: when the request server read the request (queueing time is now - received).
  // Calling `reply` with an empty body sends nothing: the request is dropped (counted as
  // answered). `peer`: the connection's routing id (opaque bytes, unique while it lives).
  using Handler =
      std::function<void(std::string body, Reply reply,
                         std::chrono::steady_clock::time_point received, std::string peer)>;

  RequestServer(zmq::context_t& context, transport::ZmqLoop& loop, transport::WorkerPool& workers,
                Handler handler, RequestServerOptions options);

  // Binds on the loop thread and waits for the outcome. The loop must be running.
  Status Start();
  // Stops taking new requests (they are answered "bad load"? no: left unread). Thread-safe.
  void StopIntake();

  std::uint64_t received() const { return received_.load(); }
  std::uint64_t replied() const { return replied_.load(); }
  std::uint64_t rejected_oversize() const { return oversize_.load(); }
  std::uint64_t shed() const { return shed_.load(); }
  // Handlers that threw: answered "Server-side exception handling payload", process kept.
  std::uint64_t handler_failures() const { return handler_failures_.load(); }
  // Replies dropped because their connection already had replies_queued_per_peer unread.
  std::uint64_t unread_dropped() const { return unread_dropped_.load(); }
  std::size_t queued() const { return queued_.load(); }
  std::int64_t in_flight() const {
    return static_cast<std::int64_t>(received_.load()) - static_cast<std::int64_t>(replied_.load());
  }

 private:
  void OnReadable();
  void SendReply(std::vector<zmq::message_t> envelope, std::string body);

  zmq::context_t& context_;
  transport::ZmqLoop& loop_;
  transport::WorkerPool& workers_;
  Handler handler_;
  const RequestServerOptions options_;
  std::unique_ptr<zmq::socket_t> router_;  // loop thread only
  transport::ZmqLoop::WatchId watch_id_ = 0;
  std::atomic<bool> intake_{true};
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> replied_{0};
  std::atomic<std::uint64_t> oversize_{0};
  std::atomic<std::uint64_t> shed_{0};
  std::atomic<std::uint64_t> handler_failures_{0};
  std::atomic<std::uint64_t> unread_dropped_{0};
  std::atomic<std::size_t> queued_{0};
  std::atomic<std::size_t> queued_bytes_{0};
  std::chrono::steady_clock::time_point last_shed_log_;  // loop thread only
  LogLimiter unread_log_{std::chrono::seconds(10)};      // loop thread only
};

}  // namespace halite::master
