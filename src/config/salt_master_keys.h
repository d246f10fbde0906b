// Salt master settings that halite-master does not read, each with what that means for an
// operator moving from salt-master (docs/migrate.md). Private to src/config.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

namespace halite::config::internal {

enum class SaltKeySupport {
  kIgnored,       // has no effect an operator or a minion would miss (logging details, niceness)
  kNotSupported,  // configures a Salt feature halite-master does not have
};

struct SaltMasterKey {
  std::string_view key;  // a name, or a family's prefix ending in '_' or '*' ("gitfs_")
  SaltKeySupport support;
  // The value (lower case; a list as "a,b") with which halite behaves as Salt does, so the
  // setting is honoured and not listed; empty: none.
  std::string_view honoured;
  std::string_view why;
};

// The entry for a Salt master setting (exact name first, then a family), or nullptr when
// Salt has no such master setting.
const SaltMasterKey* FindSaltMasterKey(std::string_view key);

// The start-up warning for a key of the master config that halite did not read:
//   "<key>: ignored: <why>", "<key>: not supported: <why>" for Salt's settings, nullopt when
// the value is one halite honours anyway (Salt's "off": null, '', [], {}; or `honoured`), and
// "unknown key '<key>' (ignored)" for anything else.
std::optional<std::string> DescribeUnreadMasterKey(std::string_view key, const YAML::Node& value);

}  // namespace halite::config::internal
