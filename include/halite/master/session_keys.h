// SessionKeys: per-minion session keys for v3 requests (salt-wire 4.6): `_auth` hands the
// minion its key, its requests are encrypted with it, and it is renewed after
// `publish_session`. Two backends:
// - memory (MakeMemorySessionKeys): a single master, the only one that ever sees the key, so
//   no file is written. A key lives as long as the accepted key file it was made for (same
//   FileStamp): a deleted and re-accepted minion gets a new one. Lost at a restart, which
//   also changes the AES key, so every minion signs in again anyway. A session file already
//   in `adopt_dir` (what salt-master left before a migration) is taken over while it is
//   within the lifetime, so a migrated minion keeps its session key.
// - file (MakeFileSessionKeys): one file per minion under <cachedir>/sessions, as Salt keeps
//   them, cached in memory; what masters sharing a cachedir need (cluster mode). halite-key -d
//   removes the file.
// Thread-safe; Get may block on disk (file backend), so call it from worker threads only.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>

#include "halite/common/result.h"
#include "halite/keys/key_store.h"
#include "halite/master/keyring.h"

namespace halite::master {

class SessionKeys {
 public:
  virtual ~SessionKeys() = default;
  // The current session key of `id`, made (or renewed) when there is none or it is older than
  // the lifetime. `id` must be a valid minion id with an accepted key whose file has
  // `key_stamp` (MinionKeys::Lookup).
  virtual Result<CrypticlePtr> Get(std::string_view id, const keys::FileStamp& key_stamp) = 0;
  // A request did not decrypt with the key Get gave: forget what was read from shared storage
  // so that the next Get reads it again (another master may have renewed it). The memory
  // backend has nothing to re-read and keeps its key (a forged request must not end a
  // minion's session).
  virtual void Forget(std::string_view id) = 0;
  // Keys held in memory now.
  virtual std::size_t SizeForTest() = 0;
};

// A new random session key (what every backend hands out when it makes one).
CrypticlePtr NewSessionKey();

std::unique_ptr<SessionKeys> MakeFileSessionKeys(std::filesystem::path dir,
                                                 std::chrono::seconds lifetime);
// At most `capacity` keys (least recently used dropped first; that minion signs in again).
// `adopt_dir` may be empty (no file is ever read).
std::unique_ptr<SessionKeys> MakeMemorySessionKeys(std::chrono::seconds lifetime,
                                                   std::size_t capacity,
                                                   std::filesystem::path adopt_dir = {});

}  // namespace halite::master
