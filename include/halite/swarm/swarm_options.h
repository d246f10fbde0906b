// halite-swarm's command line and what it makes of it: the options, the per-minion
// MinionOptions (ids, pki dirs, cycled grains) and the file-descriptor budget. Pure functions:
// no I/O, no threads, so the tests can call them directly.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "halite/common/result.h"
#include "halite/minion/minion.h"

namespace halite::swarm {

struct SwarmOptions {
  std::string master_ip;
  std::uint16_t port = 4506;
  std::uint16_t pub_port = 0;
  int count = 100;
  std::string prefix = "swarm-";
  int start_index = 0;
  double ramp = 100;  // sign-ins started per second; 0: all at once
  std::filesystem::path keys_dir = "swarm-keys";
  int keysize = 2048;
  std::vector<std::pair<std::string, std::string>> grains;
  std::vector<std::pair<std::string, std::vector<std::string>>> grains_cycle;
  int latency_ms = 0;
  int protocol = 3;
  double duration = 0;  // seconds; 0: until SIGINT/SIGTERM
  double status_interval = 5;
  int loops = 2;
  int workers = 2;       // crypto pool
  int exec_workers = 4;  // cmd.run & co
  int io_threads = 1;
  double job_timeout = 0;
  double acceptance_wait = 10;
  double auth_timeout = 5;
  double return_timeout = 5;
  double random_reauth_delay = 0;
  int idle_close_ms = -1;  // -1: automatic (on when the fd limit is short)
  bool forget_master_key = false;
  std::string log_level = "error";
  std::string log_file;
  std::filesystem::path ledger;  // empty: no ledger (--ledger FILE)
};

struct SwarmCommand {
  enum class Action { kRun, kHelp, kVersion };
  Action action = Action::kRun;
  SwarmOptions options;  // meaningful for kRun
};

// The usage text printed by --help and after a missing --master.
std::string SwarmUsage();

// `args` without the program name. Error::InvalidArgument carries the line to print (the
// caller exits 64, EX_USAGE); --help and --version are actions, not errors.
Result<SwarmCommand> ParseSwarmArgs(const std::vector<std::string>& args);

// "<prefix><start_index + index>".
std::string MinionId(const SwarmOptions& options, int index);

// What every simulated minion shares (master address, timeouts, protocol).
minion::MinionOptions CommonMinionOptions(const SwarmOptions& options, int idle_close_ms);

// Minion `index` (0-based): its id, its pki dir and cachedir under keys_dir, and one value of
// each --grains-cycle grain, taken in turn.
minion::MinionOptions MinionOptionsFor(const SwarmOptions& options,
                                       const minion::MinionOptions& common, int index);

// File descriptors `count` minions want (a SUB and a request DEALER, each a mailbox fd and a
// TCP fd, a short-lived sign-in socket, plus slack) and the fewest they can live with.
rlim_t WantedFileLimit(int count);
rlim_t MinimumFileLimit(int count);

// The idle-close period in force: --idle-close-ms when given (>= 0); otherwise 2000 ms when
// `nofile` is below MinimumFileLimit(count), and 0 (never) when it is not.
int EffectiveIdleCloseMs(const SwarmOptions& options, rlim_t nofile);

}  // namespace halite::swarm
