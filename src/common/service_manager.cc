#include "halite/common/service_manager.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdint>
#include <string>

namespace halite::service {
namespace {

void Send(const std::string& state) {
  // unset_environment=0: halite-render children are forked later and never call this, but a
  // re-exec'd master (tests) should still find NOTIFY_SOCKET.
  int r = sd_notify(0, state.c_str());
  if (r < 0) spdlog::warn("cannot notify the service manager ({}): {}", state, -r);
}

std::string Escaped(std::string_view status) {
  std::string line(status);
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  return line;
}

}  // namespace

void NotifyReady(std::string_view status) { Send("READY=1\nSTATUS=" + Escaped(status)); }

void NotifyReloading() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  auto usec = static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
              static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
  Send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading");
}

void NotifyStopping() { Send("STOPPING=1\nSTATUS=stopping"); }

void NotifyStatus(std::string_view status) { Send("STATUS=" + Escaped(status)); }

void NotifyWatchdog() { Send("WATCHDOG=1"); }

std::optional<std::chrono::microseconds> WatchdogInterval() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

}  // namespace halite::service
