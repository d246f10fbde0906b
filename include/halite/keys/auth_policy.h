// The master's `_auth` key decision (salt-wire.md 4.5.2 steps 1, 3, 4 and 5): whether a
// minion's key is accepted, left pending, rejected or denied, with the key files written the
// way Salt writes them. Building and signing the reply (step 6) is the master's job.
//
// Functions here are thread-safe. DecideAuth and LoadPatternFile block on disk: call them from
// the blocking pool. MatchesPattern is pure CPU.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "halite/common/result.h"
#include "halite/keys/key_store.h"
#include "halite/wire/rsa.h"

namespace halite::keys {

struct AuthPolicyOptions {
  bool auto_accept = false;
  // Accept every key and overwrite a changed one; the state machine is skipped.
  bool open_mode = false;
  // Lines of autosign_file / autoreject_file (see LoadPatternFile).
  std::vector<std::string> autosign_patterns;
  std::vector<std::string> autoreject_patterns;
  // Age after which minions_autosign/<id> stubs expire; <= 0 never expires them.
  std::chrono::minutes autosign_timeout{120};
  // max_pending_keys: a new id's key is written to minions_pre (or, by autoreject_file, to
  // minions_rejected) only while that directory holds fewer keys than this; 0: no limit.
  std::size_t max_pending_keys = 0;
};

// How many keys each directory holds, without listing it on every sign-in. Two things a
// stranger on 4506 reaches need a count: max_pending_keys (every new id is a new file, so
// without a bound a stranger fills minions_pre, a shared folder in a cluster, and buries the
// real minions in `halite-key -L`) and max_minions (the accepted keys, checked for every id
// that is not accepted: listing 100,000 keys for every stranger's sign-in held the workers).
// A directory is listed by one caller at a time: the first time (the others wait for it),
// then once its count is `refresh` old, or ten times as long as the last listing took,
// whichever is longer (the others use the count it had meanwhile). New pending and rejected
// keys are counted up between listings. Thread-safe; several masters on one pki dir each keep
// a count, so together they may overshoot by what they write between two listings.
class KeyCounts {
 public:
  explicit KeyCounts(std::chrono::steady_clock::duration refresh = std::chrono::seconds(1))
      : refresh_(refresh) {}
  // True (and the key counted) when `state`'s directory holds fewer than `max` keys; always true
  // for max 0. Errors are the store's.
  Result<bool> TryAdd(KeyStore& store, KeyState state, std::size_t max);
  // Uncounts a key TryAdd counted that was not written after all.
  void GiveBack(KeyState state);
  // The keys in `state`'s directory, as last listed.
  Result<std::size_t> Count(KeyStore& store, KeyState state);

 private:
  struct Tally {
    bool known = false;
    bool listing = false;  // a caller is listing the directory now
    std::size_t keys = 0;
    std::chrono::steady_clock::time_point next_listing;
  };
  // Lists `state`'s directory when its count is due and no other caller is listing it; then
  // calls `use` with the count under the lock.
  template <typename F>
  auto WithCount(KeyStore& store, KeyState state, F use)
      -> Result<decltype(use(std::declval<std::size_t&>()))>;
  const std::chrono::steady_clock::duration refresh_;
  std::mutex mu_;
  std::condition_variable listed_;  // a listing ended
  std::array<Tally, 4> tallies_;    // by KeyState; guarded by mu_
};

// Reads an autosign/autoreject file: one pattern per line, surrounding whitespace stripped,
// blank lines and lines starting with '#' skipped. A missing file is an empty list. Like Salt,
// a world-writable file is refused, and so is a group-writable one unless
// `permissive_pki_access`: PermissionDenied, which the caller should log (Salt logs "Wrong
// permissions for <file>, ignoring content") and treat as no patterns.
Result<std::vector<std::string>> LoadPatternFile(const std::filesystem::path& path,
                                                 bool permissive_pki_access = false);

// Salt's expr_match over a list: true if `id` matches any pattern as an fnmatch glob (Python
// fnmatch rules: case-sensitive, '*' also matches '/', '\' is literal) or as a regular
// expression (PCRE2 with Python re syntax, wire/regex.h) that matches the whole id. Patterns
// that are not valid regexes, or whose match hits a limit, are only tried as globs.
bool MatchesPattern(std::string_view id, const std::vector<std::string>& patterns);

// A `pub` longer than this is refused before anything is read or written; one that does not
// parse as an RSA public key is refused before it is written anywhere. A 16384-bit key (the
// largest RsaPublicKey takes) is under 3 KiB of PEM.
inline constexpr std::size_t kMaxPublicKeyBytes = 16 * 1024;

enum class AuthVerdict { kAccepted, kPending, kRejected, kDenied };

struct AuthDecision {
  AuthVerdict verdict = AuthVerdict::kRejected;
  // The `ret` of the reply: true for accepted and pending, false otherwise.
  bool result = false;
  // The salt/auth event's act: "accept", "pend", "reject", "denied", or "" on the branches
  // where Salt leaves act out.
  std::string act;
  // Why, in words, for the log.
  std::string reason;
  // A new id's key was not written because its directory holds max_pending_keys keys: the
  // minion is answered "full" (it retries), as for max_minions.
  bool full = false;
};

// Decides the `_auth` request of minion `id` that sent public key text `pub`.
// - Invalid id (ValidMinionId), or `pub` over kMaxPublicKeyBytes: kRejected, result false,
//   nothing read or written. A `pub` that would be written (pending, denied, rejected,
//   accepted) and is not an RSA public key: kRejected, nothing written.
// - auto_reject = id matches autoreject_patterns. auto_sign = auto_accept, or id matches
//   autosign_patterns, or store.ConsumeAutosignStub(id, autosign_timeout) (consumed only when
//   the first two are false, as Salt does; always evaluated, even when rejected later).
// - The state machine of 4.5.2 step 4 (open_mode skips it), comparing keys with
//   wire::CleanKey on both sides, writing minions_pre, minions_rejected, minions_denied and
//   minions files as Salt does.
// - Accept (step 5): writes `pub` verbatim to minions/<id> if missing (open_mode: overwrites a
//   different key; an empty pub is refused), then checks the stored key parses as an RSA
//   public key; if not, kRejected with result false.
// Errors are disk failures only; the decision itself is always a value.
// `parse` turns key text into a key (wire::RsaPublicKey::FromPem when empty); the master
// passes its parsed-key cache, so that a sign-in parses its key at most once. It is called
// only with `pub` or the accepted key's text, and must be thread-safe.
using PublicKeyParser = std::function<Result<wire::RsaPublicKey>(std::string_view pem)>;
// `limit` applies options.max_pending_keys (null: no limit).
Result<AuthDecision> DecideAuth(KeyStore& store, const AuthPolicyOptions& options,
                                std::string_view id, std::string_view pub,
                                const PublicKeyParser& parse = {}, KeyCounts* limit = nullptr);

}  // namespace halite::keys
