#pragma once
// cp.push from a minion (salt-wire 6: `_file_recv`): a file sent in chunks, written under
// <cachedir>/minions/<id>/files/<path>, as Salt's master does, when `file_recv: True`. The
// path can never leave that directory: components are checked after normalising, and every
// directory and the file itself are opened with O_NOFOLLOW from the minion's own root, so a
// symlink planted there (or a racing rename) cannot redirect a write. A file is at most
// `file_recv_max_size` MiB; a chunk must continue the file (no holes); the last chunk
// (loc + data = size) is fdatasync'ed before True is answered.

#include <string>

#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// True when the chunk was written; an error (logged by the caller) otherwise. Salt answers
// False for every failure, and so does the handler.
Status ReceiveFileChunk(const config::MasterConfig& config, const std::string& id,
                        const wire::Value& load);

}  // namespace halite::master
