// Job ids (salt-wire.md 9.1): "%Y%m%d%H%M%S%f" in UTC, 20 digits, optionally "_<suffix>".
// Functions are pure and reentrant; JidGenerator is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "halite/common/check.h"

namespace halite::jobs {

// "20250101120000123456" for 2025-01-01 12:00:00.123456 UTC (sub-microseconds truncated).
std::string GenerateJid(std::chrono::system_clock::time_point time);

// Salt's is_jid: 20 digits, or 20 digits + '_' + a non-empty suffix; stricter than Salt in
// the suffix, which is at most 64 of [A-Za-z0-9._-] (Salt's unique_jid adds "_<pid>"). Jids
// go into event tags, logs and listings, and Salt's any-suffix let a minion's `_return` put
// a CR into a tag and so forge a whole event on salt-api's /events (finding 23).
bool IsJid(std::string_view jid);

// Salt's jid_to_time: "2025, Jan 01 12:00:00.123456"; empty when `jid` is not a jid.
std::string JidToStartTime(std::string_view jid);

// The local_cache directory of a jid, relative to the cachedir: "jobs/<h[0:2]>/<h[2:]>" with
// h the lowercase sha256 hex of the jid (Salt's hash_type default).
std::string JidDir(std::string_view jid);

// Hands out strictly increasing jids within a process (Salt's unique_jid rule): when the clock
// has not moved past the last jid, the next one is the last plus one microsecond.
class JidGenerator {
 public:
  // A non-empty `suffix` is appended as "_<suffix>" (Salt uses the pid; a cluster may use the
  // master id so that two masters never hand out the same jid).
  explicit JidGenerator(std::string suffix = {}) : suffix_(std::move(suffix)) {}

  std::string Next() { return NextAt(std::chrono::system_clock::now()); }
  // As Next, with the caller's clock reading.
  std::string NextAt(std::chrono::system_clock::time_point now);

 private:
  const std::string suffix_;
  std::mutex mu_;
  std::int64_t last_micros_ HALITE_GUARDED_BY(mu_) = 0;  // since the epoch
};

}  // namespace halite::jobs
