// The RSA key pairs a node keeps on disk (salt-wire.md 4.1, 10.2): {dir}/{name}.pem (PKCS#1,
// mode 0400) and {dir}/{name}.pub (SPKI, trailing newline, mode 0600), for "master", "minion"
// and, in cluster_pki_dir, "cluster".
//
// Thread-safe and safe when several processes start at once on a shared directory; blocks on
// disk (and on key generation, about a second for 2048 bits). Call at start-up or from the
// blocking pool.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/rsa.h"

namespace halite::keys {

// Loads {dir}/{name}.pem, rewriting {dir}/{name}.pub when it is missing. When the .pem is
// missing, creates `dir` (0700) if needed, generates a `bits`-bit key and creates the .pem
// exclusively: when two processes race, exactly one key is written and the loser loads the
// winner's. A .pem that does not parse is DataLoss (the file is left alone for the operator).
// InvalidArgument for a `name` that is not a plain file name.
Result<wire::RsaPrivateKey> LoadOrCreateKeyPair(const std::filesystem::path& dir,
                                                std::string_view name, int bits = 2048);

// The text of {dir}/{name}.pub as stored (apply wire::CleanKey for the auth reply's pub_key).
// NotFound when missing.
Result<std::string> ReadPublicKeyText(const std::filesystem::path& dir, std::string_view name);

}  // namespace halite::keys
