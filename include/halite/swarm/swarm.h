// Runs a swarm of simulated minions until --duration passes or SIGINT/SIGTERM arrives.
#pragma once

#include "halite/swarm/swarm_options.h"

namespace halite::swarm {

// Blocks SIGINT/SIGTERM on the calling thread (and the threads it starts), makes missing keys,
// starts the minions at --ramp per second, prints progress and a summary to stdout. Returns
// the process exit code: 0, or 130 when interrupted while making keys.
int RunSwarm(const SwarmOptions& options);

}  // namespace halite::swarm
