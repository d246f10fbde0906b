#pragma once
// Publishing one job (salt-wire 7.2): resolve the target, assign the jid, save the job, fire
// its events and hand the pub load to the publisher, as salt-master's ClearFuncs.publish does.
// Used by the CLI's clear `publish` and by minions' `minion_pub` (peer.h). Worker threads only
// (resolving a target and saving the job block on disk).

#include "halite/master/context.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// `load` is a publish load without the root key (tgt, fun, arg, tgt_type, ret, jid, user, to,
// kwargs). Returns the reply's `load` map as Salt's master sends it: {jid, minions, missing}
// on success; with a nil or absent jid and an `error` text otherwise.
wire::Value PublishJob(MasterContext& ctx, wire::Value load);

// What minions receive for a saved publish load (fun, arg, tgt, tgt_type, jid, ret, to, user
// and the kwargs Salt passes on); `load` must carry its jid. Also used to publish a job found
// in the job cache that no peer forwarded (a cut peer link).
wire::Value MinionPublishLoad(const wire::Value& load);

}  // namespace halite::master
