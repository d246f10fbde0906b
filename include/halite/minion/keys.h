// The minion's key pair and the pinned master key (salt-wire.md 4.1, 4.4, 4.5.4).
//
// Every function here touches the disk or does RSA private-key work: call them from a worker
// thread, never from a ZmqLoop. They are thread-safe for different pki_dirs.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "halite/common/result.h"
#include "halite/wire/rsa.h"

namespace halite::minion {

struct MinionKeys {
  wire::RsaPrivateKey private_key;
  std::string public_pem;  // CleanKey(SPKI PEM): the `pub` field of _auth
  std::string tok;         // X931Sign(private_key, "salt"), memoized (4.4)
};

inline constexpr char kMinionPemName[] = "minion.pem";
inline constexpr char kMinionPubName[] = "minion.pub";
inline constexpr char kMasterPubName[] = "minion_master.pub";

// Loads {pki_dir}/minion.pem, or generates a `bits`-bit key and writes minion.pem (PKCS#1,
// mode 0400) and minion.pub (SPKI, 0644) atomically. pki_dir is created with mode 0700 when
// missing. A missing minion.pub next to an existing minion.pem is rewritten.
// Errors: disk errors (Unavailable / PermissionDenied), a corrupt minion.pem (DataLoss).
Result<MinionKeys> LoadOrCreateKeys(const std::filesystem::path& pki_dir, int bits = 2048);

// The cached master key text ({pki_dir}/minion_master.pub), nullopt when there is none.
Result<std::optional<std::string>> ReadPinnedMasterKey(const std::filesystem::path& pki_dir);
// Writes the `pub_key` of the first successful sign-in, exactly as received (TOFU), mode 0644.
Status WritePinnedMasterKey(const std::filesystem::path& pki_dir, const std::string& pem);

// Salt's comparison of key texts: equal once line breaks are ignored.
bool SameKeyText(std::string_view a, std::string_view b);

}  // namespace halite::minion
