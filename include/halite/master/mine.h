#pragma once
// Salt's mine on the master (salt-wire 6.2): what a requester may read of the minions' mine
// data, with the master-side `mine_get` ACL and each entry's minion-side `allow_tgt`, as
// salt.daemons.masterapi's _mine_get decides it. Used by `_mine_get` (the requester is the
// minion that asks) and by pillar templates' saltutil.runner('mine.get') (the master itself).

#include <string>

#include "halite/master/context.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// {minion: value} for one function named in `fun` (a string), {function: {minion: value}} for
// several (a comma list naming two or more, or an array); only the minions `tgt` matches and
// the functions and entries `requester` may read. Pillar values in `tgt` compare exactly
// ("pillar", "pillar_pcre" and the I@ and J@ terms of "compound"), as Salt's _mine_get does
// for all but pillar_pcre: no requester can probe pillar values it may not read.
wire::Value MineGet(MasterContext& ctx, const std::string& requester, const wire::Value& tgt,
                    const wire::Value& fun, const std::string& tgt_type);

}  // namespace halite::master
