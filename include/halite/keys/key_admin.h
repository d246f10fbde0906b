// Operator actions behind halite-key (salt-key's defaults), the key fingerprint, and the AES
// rotation drop file (salt-wire.md 5.1).
//
// All functions are thread-safe and block on disk; halite-key calls them from main, the master
// from the blocking pool.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/keys/key_store.h"

namespace halite::keys {

// Moves the pending key of `id` to accepted. Like salt-key -a without --include-rejected,
// only pending keys qualify: NotFound when `id` has no pending key.
Status Accept(KeyStore& store, std::string_view id);

// Moves the pending key of `id` to rejected. Like salt-key -r without --include-accepted,
// only pending keys qualify: NotFound when `id` has no pending key.
Status Reject(KeyStore& store, std::string_view id);

// Moves the key of `id` from `from` to `to`, as salt-key -a --include-rejected or
// -r --include-accepted do: NotFound when `id` has no key in `from`.
Status MoveKey(KeyStore& store, std::string_view id, KeyState from, KeyState to);

// Removes the key of `id` from every state (accepted, pending, rejected, denied). NotFound
// when there was none. The caller then writes the drop file (salt-key does so after delete
// and reject when rotate_aes_key is on).
Status Delete(KeyStore& store, std::string_view id);

// Salt's pem_finger (salt.utils.crypt) as salt-key -f prints it: SHA-256 over the PEM lines
// between the header and the footer, each with its line ending, blank lines ignored, in hex
// with a ':' after every byte ("ab:cd:..."). InvalidArgument when fewer than three non-blank
// lines remain.
Result<std::string> Fingerprint(std::string_view pem);

// Asks the master `master_id` to rotate its AES key: creates {cachedir}/.dfn with mode 0400
// and content `master_id`, complete or not at all (Salt writes a fixed ".dfn-next" and renames
// it; a unique temp name is used here so that two writers cannot collide). Nothing is done
// when .dfn already exists.
Status WriteDropFile(const std::filesystem::path& cachedir, std::string_view master_id);

// The master's side: true, and .dfn removed, when {cachedir}/.dfn is a regular file with mode
// exactly 0400 and content equal to `master_id` (Salt 3007). Otherwise false and the file is
// left alone, as Salt 3007 does.
Result<bool> ConsumeDropFile(const std::filesystem::path& cachedir, std::string_view master_id);

}  // namespace halite::keys
