// spdlog set-up. Every program calls SetUpLogging once from main before it starts threads;
// afterwards spdlog's default logger is thread-safe and is used everywhere.
#pragma once

#include <spdlog/spdlog.h>

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

}  // namespace halite
