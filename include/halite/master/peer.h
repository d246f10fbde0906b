#pragma once
// Minions that drive other minions or the master (salt-wire 6.2; Salt's AESFuncs.minion_pub,
// pub_ret and minion_runner): `publish.publish` / `publish.full_data` publish a job on the
// minion's behalf when the master's `peer:` ACL lets its id run the function, and poll the
// job's returns with `pub_ret` (only the minion that published may read them);
// `publish.runner` runs one of halite's runners under `peer_run:`. Anything the ACLs do not
// allow is answered `{}`, as Salt answers it, and logged. The requester is the id its tok
// proved (v3 session, signed v2); an unsigned v2 request is always refused here.
// Worker threads only (targets, the job cache and runners block).

#include <string>

#include "halite/master/handlers.h"

namespace halite::master {

// Where the saved job load names the minion that published it through minion_pub; a CLI
// publish can never carry it (clear_funcs.cc drops it).
inline constexpr const char kPeerRequesterKey[] = "__minion_publisher";

// Answers minion_pub, pub_ret and minion_runner, and refuses minion_publish (the synchronous
// form older minions sent); false (req untouched) for any other command.
bool HandlePeerCommand(MasterContext& ctx, const std::string& cmd, AesRequest& req);

}  // namespace halite::master
