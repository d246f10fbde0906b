// What a SIGHUP may change in a running master. PlanReload compares the running config with
// a freshly loaded one, key by key as written in the files (a key added, removed or given
// another value), and takes over the keys that are safe to change live; every other changed
// key is listed as needing a restart and keeps its running value. Pure: no I/O, reentrant.
#pragma once

#include <string>
#include <vector>

#include "halite/config/master_config.h"

namespace halite::daemon {

struct ReloadPlan {
  std::vector<std::string> applied;       // changed keys whose new values take effect now
  std::vector<std::string> need_restart;  // changed keys that keep their running values
  config::MasterConfig effective;         // the running config with `applied` taken over
  bool log_level_changed = false;
  bool auth_changed = false;    // the key acceptance policy must be rebuilt
  bool pillar_changed = false;  // the pillar compiler must be rebuilt
};

// `running` is what the master runs with (its `source` the document it was parsed from, with
// the applied keys of earlier reloads taken over); `next` the file as it is now.
ReloadPlan PlanReload(const config::MasterConfig& running, const config::MasterConfig& next);

// The keys PlanReload can apply live, sorted (docs and the reload note).
std::vector<std::string> LiveKeys();

}  // namespace halite::daemon
