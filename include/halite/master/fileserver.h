// The "roots" file server (salt-wire 6.2: _master_opts, _file_envs, _file_list,
// _file_list_emptydirs, _dir_list, _symlink_list, _file_hash, _file_hash_and_stat, _file_find,
// _serve_file, _master_tops) over file_roots. Paths are relative to an environment's roots;
// absolute paths and '..' are refused. Blocks on disk: worker threads only.
#pragma once

#include <optional>
#include <string>

#include "halite/config/master_config.h"
#include "halite/master/file_hashes.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

// nullopt when `cmd` is not a file server command. `hashes` remembers file hashes between
// requests (null: each `_file_hash` reads its file again, still in bounded chunks).
std::optional<wire::Value> HandleFileCommand(const config::MasterConfig& config, FileHashes* hashes,
                                             const std::string& cmd, const wire::Value& load);

}  // namespace halite::master
