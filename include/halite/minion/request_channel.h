// A REQ-like request client over one DEALER socket (salt-wire.md 2.1, 2.3, 2.5).
//
// Frames are [empty delimiter, body], so a ROUTER sees exactly what a REQ sends. One request
// is on the wire at a time (Salt's masters may answer one connection's requests out of order);
// the rest wait in a queue. When a try times out the socket is closed and reopened, dropping
// any late reply, and the same body is sent again, up to `tries` times, as Salt's
// RequestClient does.
//
// Threads: create, use and destroy on the loop thread. Callbacks run on the loop thread; a
// callback may Send() again or destroy the channel. Destroying it drops queued requests
// without calling their callbacks. No exceptions escape: ZeroMQ errors count as a failed try.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "halite/common/result.h"
#include "halite/transport/zmq_loop.h"

namespace halite::minion {

class RequestChannel {
 public:
  struct Options {
    std::string endpoint;  // tcp://ip:port ("tcp://[v6]:port")
    bool ipv6 = false;
    // > 0: close the socket after this much idle time; the next request reopens it.
    std::chrono::milliseconds idle_close{0};
    // Optional: incremented (relaxed) for every try that times out.
    std::atomic<std::uint64_t>* timeout_counter = nullptr;
  };
  // The reply body, or DeadlineExceeded after the last try timed out.
  using Callback = std::function<void(Result<std::string>)>;
  struct Request {
    std::string body;
    std::chrono::milliseconds timeout{60'000};
    std::chrono::milliseconds timeout_max{0};  // > timeout: random per try in [timeout, max]
    int tries = 1;
    Callback done;
  };

  RequestChannel(transport::ZmqLoop& loop, zmq::context_t& context, Options options);
  ~RequestChannel();
  RequestChannel(const RequestChannel&) = delete;
  RequestChannel& operator=(const RequestChannel&) = delete;

  // Queues a request; `urgent` puts it at the front of the queue (sign-in).
  void Send(Request request, bool urgent = false);

  std::size_t queued() const { return queue_.size() + (in_flight_ ? 1 : 0); }
  bool socket_open() const { return socket_ != nullptr; }
  std::uint64_t timeouts() const { return timeouts_; }

 private:
  void Pump();
  void Transmit();
  void OnReadable();
  void OnTryFailed();
  void Finish(Result<std::string> result);
  bool OpenSocket();
  void CloseSocket();
  void ArmIdleTimer();
  void CancelTimer(transport::ZmqLoop::TimerId& id);
  std::chrono::milliseconds TryTimeout() const;

  transport::ZmqLoop& loop_;
  zmq::context_t& context_;
  Options options_;
  std::unique_ptr<zmq::socket_t> socket_;
  transport::ZmqLoop::WatchId watch_ = 0;
  transport::ZmqLoop::TimerId try_timer_ = 0;
  transport::ZmqLoop::TimerId idle_timer_ = 0;
  bool in_flight_ = false;
  Request current_;
  int tries_left_ = 0;
  std::deque<Request> queue_;
  std::uint64_t timeouts_ = 0;
  // Expires when the channel is destroyed; callbacks and timers check it.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace halite::minion
