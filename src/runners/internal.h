// Helpers the runner families share (not part of the module's interface).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "halite/runners/runner.h"

namespace halite::runners::internal {

// A job published to minions by a runner, as LocalClient.cmd gathers it.
struct Gathered {
  std::map<std::string, client::MinionReturn> returns;  // by minion id
  std::vector<std::string> targeted;                    // every minion the master expected
  std::vector<std::string> missing;                     // targeted, no return, sorted
};

// Publishes `fun` to `tgt` through the master and waits (env.timeout past the last return,
// no find_job extension) for the targeted minions. A target that matches no minion is an empty
// Gathered, as Salt's cmd returns {}.
Result<Gathered> PublishAndWait(RunnerEnv& env, const wire::Value& tgt, const std::string& tgt_type,
                                const std::string& fun, wire::Array arg = {});

// The master's answer to a halite local command (`_halite_*`).
Result<wire::Value> AskMaster(RunnerEnv& env, wire::Value load);

// Salt's split_input: a list as it is, a comma-separated string split (items stripped).
std::vector<std::string> SplitInput(const wire::Value& v);

wire::Value StrList(const std::vector<std::string>& items);

// Salt's _format_job_instance + jid_to_time over a saved job load (or over one running job's
// data): Function, Arguments, Target, Target-type, User, Metadata when set, Minions when
// given, StartTime; {"Error": ..., "StartTime": ...} when `load` is not a map or is empty.
wire::Value FormatJidInstance(const std::string& jid, const wire::Value& load,
                              const wire::Value* minions);

}  // namespace halite::runners::internal
