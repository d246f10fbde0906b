// spdlog set-up. Every program calls SetUpLogging once from main before it starts threads;
// afterwards spdlog's default logger is thread-safe and is used everywhere.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "halite/common/result.h"

namespace halite {

struct LogOptions {
  std::string level = "info";  // Salt's names: trace, debug, info, warning, error, critical, quiet
  std::string file;            // empty: stderr
  std::string name = "halite";
};

// Error::InvalidArgument for an unknown level; Error::Unavailable when the file can't be opened.
Status SetUpLogging(const LogOptions& options);

// Maps a Salt log level name to spdlog's; nullopt when unknown.
std::optional<spdlog::level::level_enum> ParseLogLevel(std::string_view name);

// At most one line per period for a message that can repeat once per request (a return that
// cannot be stored, a refused sign-in): Pass() says whether to log now, and how many were held
// back since the last line that was (say so in that line). Thread-safe.
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::steady_clock::duration period) : period_(period) {}
  // nullopt: do not log; otherwise the number suppressed since the last line logged.
  std::optional<std::uint64_t> Pass(
      std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

 private:
  const std::chrono::steady_clock::duration period_;
  std::mutex mu_;
  bool logged_once_ = false;
  std::chrono::steady_clock::time_point last_;
  std::uint64_t suppressed_ = 0;
};

// " (N more like it since the last)" for N > 0, "" otherwise: the tail of a limited line.
std::string SuppressedSuffix(std::uint64_t suppressed);

// Attacker-supplied text as it may go into a log line: control bytes as \xNN, at most 128
// bytes, "..." when cut.
std::string Printable(std::string_view text);

}  // namespace halite
