// Resolves a target against the accepted keys and the cached grains (salt-wire 7.2):
// whom the master expects to answer. Blocks on disk: worker threads only.
#pragma once

#include <string>
#include <vector>

#include "halite/common/result.h"
#include "halite/master/context.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

struct Resolved {
  std::vector<std::string> minions;  // accepted and matching, sorted
  std::vector<std::string> missing;  // list targets naming ids that are not accepted
};

Result<Resolved> ResolveTargets(MasterContext& ctx, const wire::Value& tgt,
                                const std::string& tgt_type, const std::string& delimiter);

}  // namespace halite::master
