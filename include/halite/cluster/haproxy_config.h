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
  // The master's own ports (etcd member records); 0: the options' ports.
  std::uint16_t publish_port = 0;
  std::uint16_t ret_port = 0;
  std::uint16_t health_port = 0;
};

// The backends RenderHaproxyConfig writes, which SyncHaproxyServers keeps in step.
inline constexpr const char* kHaproxyPublishBackend = "halite_publish";
inline constexpr const char* kHaproxyRequestBackend = "halite_request";
// Check settings of every server: in the config's default-server line, and spelled out for
// servers added at runtime (HAProxy applies no default-server to those).
inline constexpr const char* kHaproxyServerCheck =
    "inter 1s fastinter 500ms fall 2 rise 2 on-marked-down shutdown-sessions";

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

// Where `master` listens for a backend's traffic: its own port, else the options' backend
// override, else the front's port; and its /health port.
std::uint16_t HaproxyPublishPort(const HaproxyOptions& options, const HaproxyMaster& master);
std::uint16_t HaproxyRetPort(const HaproxyOptions& options, const HaproxyMaster& master);
std::uint16_t HaproxyHealthPort(const HaproxyOptions& options, const HaproxyMaster& master);
std::string HaproxyHostPort(const std::string& address, std::uint16_t port);

}  // namespace halite::cluster
