#include "halite/keys/auth_policy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "halite/keys/fs.h"
#include "halite/wire/glob.h"
#include "halite/wire/regex.h"
#include "halite/wire/rsa.h"

namespace halite::keys {
namespace {

constexpr std::string_view kWhitespace = " \t\n\r\v\f";

std::string_view Strip(std::string_view s) {
  const auto begin = s.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return {};
  const auto end = s.find_last_not_of(kWhitespace);
  return s.substr(begin, end - begin + 1);
}

// A pattern that is not a valid regex, or whose match hits a limit, simply does not match.
// Compiled once per thread and pattern (the files are re-read per request).
bool RegexFullMatch(const std::string& pattern, std::string_view text) {
  Result<wire::Regex> re = wire::CompileRegexCached(pattern);
  if (!re.ok()) return false;
  Result<bool> matched = re->Match(text, wire::RegexAnchor::kFull);
  return matched.ok() && *matched;
}

// Salt's salt.utils.stringutils.expr_match.
bool ExprMatch(std::string_view id, const std::string& pattern) {
  return wire::GlobMatch(pattern, id) || RegexFullMatch(pattern, id);
}

AuthDecision Decision(AuthVerdict verdict, std::string act, std::string reason) {
  const bool result = verdict == AuthVerdict::kAccepted || verdict == AuthVerdict::kPending;
  return AuthDecision{verdict, result, std::move(act), std::move(reason)};
}

// The key text in `state`, or nullopt when there is none (Salt's os.path.isfile is false).
Result<std::optional<std::string>> ReadIfPresent(KeyStore& store, KeyState state,
                                                 std::string_view id) {
  Result<std::string> text = store.Read(state, id);
  if (text.ok()) return std::optional<std::string>(std::move(text).value());
  if (text.error().code == ErrorCode::kNotFound) return std::optional<std::string>();
  return std::move(text).error();
}

bool SameKey(std::string_view stored, std::string_view pub) {
  return wire::CleanKey(stored) == wire::CleanKey(pub);
}

Result<bool> AutoSign(KeyStore& store, const AuthPolicyOptions& options, std::string_view id) {
  if (options.auto_accept) return true;
  if (MatchesPattern(id, options.autosign_patterns)) return true;
  // TODO(keys): autosign_grains (4.5.2 step 3) once the request handler passes the grains.
  return store.ConsumeAutosignStub(id, options.autosign_timeout);
}

// Why `pub` may not be written as a minion key, or nullopt when it may: a stranger must not
// squat an id or fill the (shared) pki dir with whatever it sends.
std::optional<std::string> UnusableKey(std::string_view pub, const PublicKeyParser& parse) {
  if (pub.size() > kMaxPublicKeyBytes) {
    return "public key of " + std::to_string(pub.size()) + " bytes is over the limit of " +
           std::to_string(kMaxPublicKeyBytes);
  }
  Result<wire::RsaPublicKey> key = parse(pub);
  if (!key.ok()) return "not an RSA public key: " + key.error().message;
  return std::nullopt;
}

// Step 5. `accepted` is the minions/<id> text read during the state machine, if any.
Result<AuthDecision> Accept(KeyStore& store, const AuthPolicyOptions& options, std::string_view id,
                            std::string_view pub, std::optional<std::string> accepted,
                            const PublicKeyParser& parse) {
  std::string stored;
  if (options.open_mode) {
    HALITE_ASSIGN_OR_RETURN(accepted, ReadIfPresent(store, KeyState::kAccepted, id));
    if (pub.empty()) return Decision(AuthVerdict::kRejected, "", "public key is empty");
    // Salt compares the raw text here, not clean_key.
    if (!accepted.has_value() || *accepted != pub) {
      HALITE_RETURN_IF_ERROR(store.Write(KeyState::kAccepted, id, pub));
      stored = std::string(pub);
    } else {
      stored = std::move(*accepted);
    }
  } else {
    // Like Salt, look again: another master may have accepted the key meanwhile.
    if (!accepted.has_value()) {
      HALITE_ASSIGN_OR_RETURN(accepted, ReadIfPresent(store, KeyState::kAccepted, id));
    }
    if (!accepted.has_value()) {
      HALITE_RETURN_IF_ERROR(store.Write(KeyState::kAccepted, id, pub));
      stored = std::string(pub);
    } else {
      stored = std::move(*accepted);
    }
  }
  Result<wire::RsaPublicKey> key = parse(stored);
  if (!key.ok()) {
    return Decision(AuthVerdict::kRejected, "", "corrupt public key: " + key.error().message);
  }
  return Decision(AuthVerdict::kAccepted, "accept", "key accepted");
}

}  // namespace

Result<std::vector<std::string>> LoadPatternFile(const std::filesystem::path& path,
                                                 bool permissive_pki_access) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::vector<std::string>();
    return ErrnoError(errno, "stat '" + path.string() + "'");
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return Error::PermissionDenied("'" + path.string() +
                                   "' is world-writable; ignoring its patterns");
  }
  if ((st.st_mode & S_IWGRP) != 0 && !permissive_pki_access) {
    return Error::PermissionDenied("'" + path.string() +
                                   "' is group-writable and permissive_pki_access is off; "
                                   "ignoring its patterns");
  }
  Result<std::string> content = ReadFile(path);
  if (!content.ok()) {
    if (content.error().code == ErrorCode::kNotFound) return std::vector<std::string>();
    return std::move(content).error();
  }
  std::vector<std::string> patterns;
  std::string_view rest = *content;
  while (!rest.empty()) {
    const auto end = rest.find_first_of("\r\n");
    const std::string_view line = Strip(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    patterns.emplace_back(line);
  }
  return patterns;
}

bool MatchesPattern(std::string_view id, const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    if (ExprMatch(id, pattern)) return true;
  }
  return false;
}

template <typename F>
auto KeyCounts::WithCount(KeyStore& store, KeyState state, F use)
    -> Result<decltype(use(std::declval<std::size_t&>()))> {
  Tally& tally = tallies_[static_cast<std::size_t>(state)];
  std::unique_lock lock(mu_);
  // Before the first count there is none to use instead: wait for the caller listing.
  listed_.wait(lock, [&] { return tally.known || !tally.listing; });
  const auto start = std::chrono::steady_clock::now();
  if (!tally.known || (!tally.listing && start >= tally.next_listing)) {
    tally.listing = true;
    lock.unlock();
    Result<std::vector<std::string>> ids = store.List(state);
    const auto end = std::chrono::steady_clock::now();
    lock.lock();
    tally.listing = false;
    listed_.notify_all();
    if (!ids.ok()) return ids.error();
    tally.known = true;
    tally.keys = ids->size();
    tally.next_listing = end + std::max(refresh_, 10 * (end - start));
  }
  return use(tally.keys);
}

Result<bool> KeyCounts::TryAdd(KeyStore& store, KeyState state, std::size_t max) {
  if (max == 0) return true;
  return WithCount(store, state, [max](std::size_t& keys) {
    if (keys >= max) return false;
    ++keys;
    return true;
  });
}

void KeyCounts::GiveBack(KeyState state) {
  std::lock_guard lock(mu_);
  Tally& tally = tallies_[static_cast<std::size_t>(state)];
  if (tally.keys > 0) --tally.keys;
}

Result<std::size_t> KeyCounts::Count(KeyStore& store, KeyState state) {
  return WithCount(store, state, [](std::size_t& keys) { return keys; });
}

Result<AuthDecision> DecideAuth(KeyStore& store, const AuthPolicyOptions& options,
                                std::string_view id, std::string_view pub,
                                const PublicKeyParser& parser, KeyCounts* limit) {
  const PublicKeyParser parse =
      parser ? parser : [](std::string_view pem) { return wire::RsaPublicKey::FromPem(pem); };
  if (!ValidMinionId(id)) return Decision(AuthVerdict::kRejected, "", "invalid minion id");
  if (pub.size() > kMaxPublicKeyBytes) {
    return Decision(AuthVerdict::kRejected, "", *UnusableKey(pub, parse));
  }
  // Parsed only on the paths that write `pub` (a sign-in with the accepted key writes nothing).
  std::optional<std::optional<std::string>> unusable;
  auto refuse_unusable = [&]() -> std::optional<AuthDecision> {
    if (!unusable) unusable = UnusableKey(pub, parse);
    if (!*unusable) return std::nullopt;
    return Decision(AuthVerdict::kRejected, "", **unusable);
  };

  const bool auto_reject = MatchesPattern(id, options.autoreject_patterns);
  // Asked only where a key would otherwise wait as pending: a stub is consumed then, and a
  // sign-in with the accepted key never lists the stubs (a round trip to etcd).
  std::optional<bool> auto_sign_memo;
  auto auto_sign = [&]() -> Result<bool> {
    if (!auto_sign_memo) {
      HALITE_ASSIGN_OR_RETURN(const bool yes, AutoSign(store, options, id));
      auto_sign_memo = yes;
    }
    return *auto_sign_memo;
  };

  if (options.open_mode) {
    if (auto refused = refuse_unusable()) return *refused;
    return Accept(store, options, id, pub, std::nullopt, parse);
  }

  HALITE_ASSIGN_OR_RETURN(std::optional<std::string> rejected,
                          ReadIfPresent(store, KeyState::kRejected, id));
  if (rejected.has_value()) {
    return Decision(AuthVerdict::kRejected, "", "key is in minions_rejected");
  }

  HALITE_ASSIGN_OR_RETURN(std::optional<std::string> accepted,
                          ReadIfPresent(store, KeyState::kAccepted, id));
  if (accepted.has_value()) {
    if (!SameKey(*accepted, pub)) {
      if (auto refused = refuse_unusable()) return *refused;
      HALITE_RETURN_IF_ERROR(store.Write(KeyState::kDenied, id, pub));
      return Decision(AuthVerdict::kDenied, "denied",
                      "key differs from the accepted key; recorded in minions_denied");
    }
    return Accept(store, options, id, pub, std::move(accepted), parse);
  }

  HALITE_ASSIGN_OR_RETURN(std::optional<std::string> pending,
                          ReadIfPresent(store, KeyState::kPending, id));
  if (!pending.has_value()) {
    HALITE_ASSIGN_OR_RETURN(const bool pending_is_dir, store.IsDirectory(KeyState::kPending, id));
    if (pending_is_dir) {
      return Decision(AuthVerdict::kRejected, "", "the pending key path is a directory");
    }
    if (auto refused = refuse_unusable()) return *refused;
    // A new id: its key file is one more that a stranger could have made us write.
    auto room = [&](KeyState state) -> Result<bool> {
      if (!limit) return true;
      return limit->TryAdd(store, state, options.max_pending_keys);
    };
    auto full = [&](KeyState state) {
      AuthDecision d = Decision(AuthVerdict::kPending, "",
                                std::string(KeyStateDir(state)) + " holds max_pending_keys (" +
                                    std::to_string(options.max_pending_keys) +
                                    ") keys; the new key was not recorded");
      d.result = false;  // answered "full", not pending
      d.full = true;
      return d;
    };
    if (auto_reject) {
      HALITE_ASSIGN_OR_RETURN(const bool has_room, room(KeyState::kRejected));
      if (!has_room) return full(KeyState::kRejected);
      HALITE_RETURN_IF_ERROR(store.Write(KeyState::kRejected, id, pub));
      return Decision(AuthVerdict::kRejected, "reject", "new key rejected by autoreject_file");
    }
    HALITE_ASSIGN_OR_RETURN(const bool sign, auto_sign());
    if (!sign) {
      HALITE_ASSIGN_OR_RETURN(const bool has_room, room(KeyState::kPending));
      if (!has_room) return full(KeyState::kPending);
      HALITE_RETURN_IF_ERROR(store.Write(KeyState::kPending, id, pub));
      return Decision(AuthVerdict::kPending, "pend", "new key placed in pending");
    }
    return Accept(store, options, id, pub, std::nullopt, parse);
  }

  if (auto_reject) {
    // Salt moves the pending file as it is, whatever key this request carries.
    HALITE_RETURN_IF_ERROR(store.Write(KeyState::kRejected, id, *pending));
    Status removed = store.Remove(KeyState::kPending, id);
    if (!removed.ok() && removed.error().code != ErrorCode::kNotFound) {
      return std::move(removed).error();
    }
    return Decision(AuthVerdict::kRejected, "reject", "pending key rejected by autoreject_file");
  }
  if (!SameKey(*pending, pub)) {
    if (auto refused = refuse_unusable()) return *refused;
    HALITE_RETURN_IF_ERROR(store.Write(KeyState::kDenied, id, pub));
    // Salt reports act "denied" only when the key is not being auto-signed.
    HALITE_ASSIGN_OR_RETURN(const bool sign, auto_sign());
    return Decision(AuthVerdict::kDenied, sign ? "" : "denied",
                    "key differs from the pending key; recorded in minions_denied");
  }
  HALITE_ASSIGN_OR_RETURN(const bool sign, auto_sign());
  if (!sign) {
    return Decision(AuthVerdict::kPending, "pend", "key is pending; accept it with halite-key -a");
  }
  Status removed = store.Remove(KeyState::kPending, id);
  if (!removed.ok() && removed.error().code != ErrorCode::kNotFound) {
    return std::move(removed).error();
  }
  return Accept(store, options, id, pub, std::nullopt, parse);
}

}  // namespace halite::keys
