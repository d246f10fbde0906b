// AuthReplies: the answers of recent sign-ins, kept for their minions' retries.
//
// A minion waits auth_timeout (5 s) for its sign-in's answer, then closes that connection and
// sends the same bytes again on a new one (Salt's request channel retries one payload
// auth_tries times; halite-minion does the same). In a storm, a sign-in that waited in the
// queue may be answered after its minion gave up: that answer's RSA work (two private
// operations) is lost, and the retry would pay for it again. Kept here, the answer serves the
// retry instead, with no RSA at all.
//
// What a retry gets is byte for byte what the same request was answered before, so it tells
// whoever sent it nothing new (the keys in it are encrypted to the minion's public key). It is
// given only while everything it carries is still current: the accepted key file (its stamp),
// the AES key and the minion's session key; otherwise the entry is dropped and the sign-in is
// done afresh. Only answers whose request waited in the queue are kept
// (`auth_reply_cache_wait_ms`): one answered promptly is not retried, so a fleet that is not in a
// storm keeps nothing here.
//
// Bounded by bytes (oldest first out) and by age. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "halite/common/check.h"
#include "halite/keys/key_store.h"

namespace halite::master {

class AuthReplies {
 public:
  using Clock = std::chrono::steady_clock;

  // What an answer depends on, checked again before it is given to a retry.
  struct Basis {
    keys::FileStamp key_stamp;  // the accepted key file it was read from
    std::string aes_key;        // the AES key string it carries
    std::string session_key;    // the session key string it carries
    friend bool operator==(const Basis&, const Basis&) = default;
  };

  AuthReplies(std::size_t max_bytes, std::chrono::seconds max_age)
      : max_bytes_(max_bytes), max_age_(max_age) {}

  // The digest a request is kept under: its id, protocol version and packed load.
  static std::string Digest(std::string_view id, int version, std::string_view packed_load);

  struct Kept {
    Basis basis;
    std::string reply;
  };
  // The answer kept for `digest`, with its basis; the caller gives it only if the basis is
  // still current, and otherwise calls Drop.
  std::optional<Kept> Find(const std::string& digest, Clock::time_point now = Clock::now());
  void Drop(const std::string& digest);
  void Put(const std::string& digest, Basis basis, std::string reply,
           Clock::time_point now = Clock::now());

  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Entry {
    Basis basis;
    std::string reply;
    Clock::time_point added;
  };
  static std::size_t Cost(const std::string& digest, const Entry& e);
  void EraseLocked(std::unordered_map<std::string, Entry>::iterator it);  // mu_ held
  void ExpireLocked(Clock::time_point now);                               // mu_ held

  const std::size_t max_bytes_;
  const Clock::duration max_age_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_ HALITE_GUARDED_BY(mu_);
  // Digests in the order they were added; a digest no longer in entries_ (or added again
  // later) is skipped when it reaches the front.
  std::deque<std::pair<Clock::time_point, std::string>> order_ HALITE_GUARDED_BY(mu_);
  std::size_t bytes_ HALITE_GUARDED_BY(mu_) = 0;
};

}  // namespace halite::master
