// What the master and minion configs share: the problem list, the Loaded<T> result, the exit
// code for bad config and the default id.
//
// Parsing never stops at the first bad value: every problem is collected, and the returned
// Error::InvalidArgument lists them one per line ("key: what is wrong (got X)"). Daemons print
// that message and exit with kExitConfig. Unknown keys only warn.
// Thread-safety: plain data and reentrant functions.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"

namespace halite::config {

// sysexits.h EX_CONFIG: what a daemon exits with when its config is invalid.
inline constexpr int kExitConfig = 78;

// One invalid value. `key` is the full path of the setting ("publish_port",
// "file_roots.base[1]"); `message` says what is wrong and ends with "(got X)" when there is a
// value to show.
struct ConfigProblem {
  std::string key;
  std::string message;
};

// A parsed, validated config plus the warnings to log at start-up: unknown keys
// ("unknown key 'foo' (ignored)"), deprecated keys and questionable but allowed values.
template <typename T>
struct Loaded {
  T config;
  std::vector<std::string> warnings;
};

// "key: message" lines joined by '\n', in the order found.
std::string FormatProblems(const std::vector<ConfigProblem>& problems);

// OkStatus() when `problems` is empty, else Error::InvalidArgument(FormatProblems(problems)).
Status ProblemsToStatus(const std::vector<ConfigProblem>& problems);

// The id used when the config has none: the first line of /etc/hostname with surrounding
// whitespace removed, or "localhost" when that is missing or empty. Never asks DNS.
std::string DefaultId();
// DefaultId() reading `hostname_file` instead of /etc/hostname.
std::string DefaultIdFrom(const std::filesystem::path& hostname_file);

}  // namespace halite::config
