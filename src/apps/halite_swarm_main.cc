// halite-swarm: N simulated minions in one process (real keys, real crypto, one request and
// one subscribe connection each), for tests and benchmarks against halite-master or a stock
// salt-master. The work is in src/swarm; this main parses, sets up logging and runs it.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "halite/common/logging.h"
#include "halite/swarm/swarm.h"
#include "halite/version.h"

int main(int argc, char** argv) {
  auto command = halite::swarm::ParseSwarmArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!command.ok()) {
    std::cerr << "halite-swarm: " << command.error().message << "\n";
    return 64;  // EX_USAGE
  }
  if (command->action == halite::swarm::SwarmCommand::Action::kVersion) {
    std::cout << "halite-swarm " << halite::kVersion << "\n";
    return 0;
  }
  if (command->action == halite::swarm::SwarmCommand::Action::kHelp) {
    std::cerr << halite::swarm::SwarmUsage();
    return 0;
  }
  const halite::swarm::SwarmOptions& options = command->options;
  if (auto st = halite::SetUpLogging({options.log_level, options.log_file, "halite-swarm"});
      !st.ok()) {
    std::cerr << "halite-swarm: " << st.error().message << "\n";
    return 64;
  }
  try {
    return halite::swarm::RunSwarm(options);
  } catch (const std::exception& e) {
    spdlog::critical("halite-swarm: {}", e.what());
    std::abort();
  }
}
