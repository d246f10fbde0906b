// KeyStore: the minion public keys by state, in Salt's pki layout (salt-wire.md 4.1):
// accepted (minions/), pending (minions_pre/), rejected (minions_rejected/), denied
// (minions_denied/) and the one-shot autosign stubs (minions_autosign/).
//
// Implementations are thread-safe and may be shared by several processes (two masters on one
// cluster_pki_dir, halite-key next to a running master). Every call may block on disk or
// network: call only from the blocking pool or a worker thread that may block, never from an
// event loop. Ids are checked with ValidMinionId; an invalid id is InvalidArgument and touches
// nothing. Key text is stored verbatim (what the minion sent as `pub`).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"

namespace halite::keys {

// Salt's valid_id: not empty, at most 255 bytes, no '/', '\\' or NUL, and not "." or "..".
// The id becomes a file name, so this is what stops path traversal. Unlike Salt, no control
// byte (0x01-0x1f, 0x7f) either: ids reach logs, terminals and key listings verbatim.
bool ValidMinionId(std::string_view id);

enum class KeyState { kAccepted, kPending, kRejected, kDenied };

// The directory name under the pki root: "minions", "minions_pre", "minions_rejected",
// "minions_denied".
std::string_view KeyStateDir(KeyState state);

// Identifies one version of a key file so a parsed key can be cached and revalidated with a
// single stat(). Atomic replacement (rename) always changes the inode; the device tells two
// file systems apart (a pki dir moved or remounted). All zero: no file was seen.
struct FileStamp {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

class KeyStore {
 public:
  virtual ~KeyStore() = default;

  // The stored key text. NotFound if there is none (absent, or the path is not a regular
  // file, as Salt's os.path.isfile sees it).
  virtual Result<std::string> Read(KeyState state, std::string_view id) = 0;
  // Stores `pem` verbatim (no newline added), replacing any earlier key atomically. Durable
  // on return, unless the store groups its syncs: then only once AfterDurable says so.
  virtual Status Write(KeyState state, std::string_view id, std::string_view pem) = 0;
  // Runs `done` once every Write that returned before this call is durable: with OkStatus, or
  // with the error that kept it from stable storage. Does not block on disk: `done` runs
  // either at once on the caller's thread or later on a thread of the store's, so it must be
  // quick and must not call into the store.
  virtual void AfterDurable(std::function<void(Status)> done) = 0;
  // NotFound if there is no key to remove.
  virtual Status Remove(KeyState state, std::string_view id) = 0;
  // The ids in `state`, sorted. Hidden names (leading '.', which covers temp files) and
  // anything that is not a regular file are skipped, as salt-key does.
  virtual Result<std::vector<std::string>> List(KeyState state) = 0;
  // The one-shot stub minions_autosign/<id>. First every stub older than `timeout` is removed
  // (Salt sweeps the whole directory; a timeout <= 0 disables expiry). Then, if the stub for
  // `id` is still there, it is removed and true is returned; otherwise false. When two callers
  // race for one stub, only the one whose removal succeeds gets true.
  virtual Result<bool> ConsumeAutosignStub(std::string_view id, std::chrono::minutes timeout) = 0;
  // True when the key path for `id` is a directory (Salt refuses such a pending path).
  virtual Result<bool> IsDirectory(KeyState state, std::string_view id) = 0;
  // One stat() of the key file; NotFound like Read. For revalidating cached parsed keys.
  virtual Result<FileStamp> Stamp(KeyState state, std::string_view id) = 0;
  // OkStatus when the store can be read at all; Unavailable when it cannot (the key
  // directory is gone: an unmounted shared folder), so that "no key" can be told from "no way
  // to know" without a path.
  virtual Status Available() = 0;
  // The pki root (pki_dir, or cluster_pki_dir in cluster mode); for a store that is not a
  // directory, a name for messages.
  virtual const std::filesystem::path& root() const = 0;
};

}  // namespace halite::keys
