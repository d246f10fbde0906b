// Renders an HAProxy configuration (tcp mode) that spreads minions over the masters of a
// cluster and drops a master whose /health fails. Timeouts follow Salt's advice for
// clusters: the publish side keeps connections for publish_session, the request side for a
// minute; sessions on a master marked down are cut so its minions move at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace halite::cluster {

struct HaproxyMaster {
  std::string id;
  std::string address;  // IP literal
};

struct HaproxyOptions {
  std::string bind_address = "0.0.0.0";
  std::uint16_t publish_port = 4505;
  std::uint16_t ret_port = 4506;
  std::uint16_t health_port = 4510;
  std::chrono::seconds publish_session{86400};
  std::chrono::seconds request_timeout{60};
  int maxconn = 20000;
  std::vector<HaproxyMaster> masters;
  // Ports the masters listen on, when they differ from the front's (tests).
  std::uint16_t backend_publish_port = 0;  // 0: publish_port
  std::uint16_t backend_ret_port = 0;      // 0: ret_port
  std::string stats_socket;                // empty: none
};

std::string RenderHaproxyConfig(const HaproxyOptions& options);

}  // namespace halite::cluster
