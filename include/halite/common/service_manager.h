// Talking to the service manager (systemd's notify protocol, sd_notify(3)): a daemon started
// with Type=notify says when it is ready, reloading or stopping, and keeps its watchdog fed.
// Every function is a no-op when NOTIFY_SOCKET is not set (started by hand, by a test, or
// under another supervisor), so callers need no "am I under systemd" branches.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace halite::service {

// READY=1 with a STATUS= line: the sockets are bound and the keys are loaded.
void NotifyReady(std::string_view status);
// RELOADING=1 (with MONOTONIC_USEC, as systemd 253's Type=notify-reload wants); follow it with
// NotifyReady once the reload is done.
void NotifyReloading();
// STOPPING=1: shutdown has begun; systemd waits for the exit.
void NotifyStopping();
// STATUS= only: what `systemctl status` shows.
void NotifyStatus(std::string_view status);
// WATCHDOG=1: call at least twice per WatchdogInterval().
void NotifyWatchdog();
// The unit's WatchdogSec= as passed in WATCHDOG_USEC (and WATCHDOG_PID, when it names this
// process); nullopt when no watchdog is asked for.
std::optional<std::chrono::microseconds> WatchdogInterval();

}  // namespace halite::service
