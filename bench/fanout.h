// The subscriber side of a fan-out measurement (halite_limits_bench fanout and
// halite_publish_bench): K libzmq SUB sockets that subscribe to everything, and one thread
// that reads all of them until each has had N messages.
#pragma once

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

namespace halite::bench {

inline std::vector<zmq::socket_t> FanoutSubscribers(zmq::context_t& context, long count,
                                                    const std::string& endpoint) {
  std::vector<zmq::socket_t> subs;
  for (long i = 0; i < count; ++i) {
    subs.emplace_back(context, zmq::socket_type::sub);
    subs.back().set(zmq::sockopt::rcvhwm, 0);
    subs.back().set(zmq::sockopt::linger, 0);
    subs.back().set(zmq::sockopt::subscribe, "");
    subs.back().connect(endpoint);
  }
  return subs;
}

// Reads `messages` messages on every subscriber; returns the seconds from t0 to the last.
inline double DrainFanout(std::vector<zmq::socket_t>& subs, long messages,
                          std::chrono::steady_clock::time_point t0) {
  std::vector<zmq::pollitem_t> items;
  for (auto& s : subs) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
  std::vector<long> got(subs.size(), 0);
  long remaining = static_cast<long>(subs.size()) * messages;
  while (remaining > 0) {
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
    for (std::size_t i = 0; i < subs.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      zmq::message_t message;
      while (got[i] < messages && subs[i].recv(message, zmq::recv_flags::dontwait)) {
        ++got[i];
        --remaining;
      }
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace halite::bench
