// The `salt` command's job run as salt/cli/salt.py runs it, after parsing and connecting:
// batch (-b) and static (-s) through Batch, progress (-p), the returns printed as they come
// with the outputter Salt picks, missing minions, --summary, --out-file, and the exit code
// stock salt gives in each case. Runs on the caller's thread.
#pragma once

#include <chrono>
#include <ostream>

#include "halite/client/command_line.h"
#include "halite/client/local_client.h"

namespace halite::client {

struct SaltCommandContext {
  LocalClient& client;
  PublishRequest request;           // target (nodegroups expanded), function, arguments
  std::chrono::seconds timeout{5};  // the config's timeout (-t overrides)
  std::chrono::seconds gather_job_timeout{10};
  std::ostream& out;             // stdout
  std::ostream& err;             // stderr
  bool out_is_terminal = false;  // colour by default
  bool err_is_terminal = false;  // the progress bar
};

// Salt's exit codes: 0; 1 a minion returned a non-zero retcode or did not return; 2 nothing
// matched the target or nothing returned; in batch mode the highest retcode; 3 the master did
// not answer (halite's own).
int RunSaltCommand(const SaltCommandLine& cmd, SaltCommandContext& ctx);

}  // namespace halite::client
