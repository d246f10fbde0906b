// The request server: sole owner of the ROUTER socket that minions and CLIs talk to
// (tcp ret_port, plus an ipc endpoint in sock_dir for local tools). It runs on its own
// ZmqLoop ("req-server"), hands every request body to the WorkerPool and sends each reply with
// the routing envelope it came with (REQ semantics: every request is answered, errors too).
// Oversized frames are answered with "bad load" without being handed to workers.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/common/result.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"

namespace halite::master {

struct RequestServerOptions {
  std::vector<std::string> endpoints;  // tcp://ip:port, ipc://path
  std::vector<std::string> ipc_paths;  // chmod 0600 after bind
  std::size_t max_request_bytes = 100u << 20;
  int backlog = 1000;
  bool ipv6 = false;
  int tcp_keepalive = 1;
  int tcp_keepalive_idle = 300;
};

class RequestServer {
 public:
  // Exactly-once reply: thread-safe, callable from any thread, at any later time.
  using Reply = std::function<void(std::string body)>;
  // Runs on a worker thread.
  // `received`: when the request server read the request (queueing time is now - received).
  // Calling `reply` with an empty body sends nothing: the request is dropped (counted as
  // answered).
  using Handler = std::function<void(std::string body, Reply reply,
                                     std::chrono::steady_clock::time_point received)>;

  RequestServer(zmq::context_t& context, transport::ZmqLoop& loop, transport::WorkerPool& workers,
                Handler handler, RequestServerOptions options);

  // Binds on the loop thread and waits for the outcome. The loop must be running.
  Status Start();
  // Stops taking new requests (they are answered "bad load"? no: left unread). Thread-safe.
  void StopIntake();

  std::uint64_t received() const { return received_.load(); }
  std::uint64_t replied() const { return replied_.load(); }
  std::uint64_t rejected_oversize() const { return oversize_.load(); }
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
};

}  // namespace halite::master
