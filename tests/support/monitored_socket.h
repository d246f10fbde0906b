// A libzmq socket whose connection events can be awaited: a test's peer (a minion's SUB, a
// stranger's XSUB) sees when the other side finished the ZMTP handshake or dropped it.
// Set options on `socket`, then connect it. Header-only: the binaries that use it link libzmq.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <zmq.hpp>

namespace halite::testing {

class MonitoredSocket {
 public:
  // Watches ZMQ_EVENT_HANDSHAKE_SUCCEEDED and ZMQ_EVENT_DISCONNECTED; NextEvent waits 15 s.
  MonitoredSocket(zmq::context_t& ctx, zmq::socket_type type)
      : socket(ctx, type), monitor_(ctx, zmq::socket_type::pair) {
    static std::atomic<int> next{0};
    const std::string ep = "inproc://halite-test-monitor-" + std::to_string(++next);
    socket.set(zmq::sockopt::linger, 0);
    if (zmq_socket_monitor(socket.handle(), ep.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
      throw zmq::error_t();
    }
    monitor_.set(zmq::sockopt::rcvtimeo, 15000);
    monitor_.connect(ep);
  }
  ~MonitoredSocket() { Unmonitor(); }
  MonitoredSocket(const MonitoredSocket&) = delete;
  MonitoredSocket& operator=(const MonitoredSocket&) = delete;

  // The next event's id (ZMQ_EVENT_*), or 0 when none came within 15 s.
  int NextEvent() {
    zmq::message_t event, address;
    if (!monitor_.recv(event).has_value()) return 0;
    if (event.more()) (void)monitor_.recv(address);
    std::uint16_t id = 0;
    std::memcpy(&id, event.data(), sizeof id);
    return id;
  }
  // Stops the monitor; call before closing `socket` by hand.
  void Unmonitor() {
    if (socket.handle() != nullptr) zmq_socket_monitor(socket.handle(), nullptr, 0);
  }

  zmq::socket_t socket;

 private:
  zmq::socket_t monitor_;
};

}  // namespace halite::testing
