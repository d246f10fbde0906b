// A running HAProxy's runtime API (its stats socket, "level admin"), and the sync that makes
// its backends serve exactly the masters of a member list without a reload: `add server`,
// `set server ... addr/check-port/state`, `del server` (HAProxy 2.6: every server can be
// deleted once in maintenance with no connection; servers added at runtime get the checks of
// kHaproxyServerCheck spelled out, since no default-server applies to them).
//
// Not thread-safe: one caller. Every command is one connection with a deadline; errors are
// values (Unavailable: the socket does not answer).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "halite/cluster/haproxy_config.h"
#include "halite/common/result.h"

namespace halite::cluster {

class HaproxyRuntime {
 public:
  virtual ~HaproxyRuntime() = default;
  // HAProxy's answer to one command (text, possibly empty).
  virtual Result<std::string> Command(const std::string& command) = 0;
};

std::unique_ptr<HaproxyRuntime> MakeHaproxySocket(
    std::filesystem::path socket, std::chrono::milliseconds timeout = std::chrono::seconds(2));

// One line of `show servers state` (format 1).
struct HaproxyServerState {
  std::string backend;
  std::string name;
  std::string address;
  std::uint16_t port = 0;
  std::uint16_t check_port = 0;
  int admin_state = 0;  // bit 0x01: forced maintenance (set server state maint)
};

// InvalidArgument on an answer that is not format 1 with the columns used here.
Result<std::vector<HaproxyServerState>> ParseServersState(const std::string& text);

// What a sync did, as "backend/server" entries.
struct HaproxySyncReport {
  std::vector<std::string> added;    // a member HAProxy did not have
  std::vector<std::string> updated;  // a member whose address or ports changed
  std::vector<std::string> enabled;  // a member that was in maintenance
  std::vector<std::string> removed;  // no longer a member: deleted
  // No longer a member, in maintenance, but not deleted yet (connections still open); the
  // next sync deletes it.
  std::vector<std::string> draining;
};

// Makes both halite backends of the HAProxy behind `runtime` match `desired.masters` (ports
// as RenderHaproxyConfig writes them), then reads the state back: Internal when it does not
// match (a command HAProxy refused; its answer is in the message).
Result<HaproxySyncReport> SyncHaproxyServers(HaproxyRuntime& runtime,
                                             const HaproxyOptions& desired);

}  // namespace halite::cluster
