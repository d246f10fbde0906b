// Everything a request handler may use, built once by daemon/ and shared by reference.
// Handlers run on worker threads; every member is thread-safe or immutable after start.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "halite/auth/authenticator.h"
#include "halite/config/master_config.h"
#include "halite/jobs/jid.h"
#include "halite/jobs/job_cache.h"
#include "halite/keys/auth_policy.h"
#include "halite/keys/key_store.h"
#include "halite/master/auth_replies.h"
#include "halite/master/file_hashes.h"
#include "halite/master/keyring.h"
#include "halite/master/minion_data.h"
#include "halite/master/minion_keys.h"
#include "halite/master/presence.h"
#include "halite/master/request_limits.h"
#include "halite/master/services.h"
#include "halite/master/session_keys.h"
#include "halite/wire/rsa.h"

namespace halite::pillar {
class PillarCompiler;
}  // namespace halite::pillar

namespace halite::master {

// Request commands counted by name in /metrics; anything else is "other".
inline constexpr const char* kCountedCommands[] = {"_auth", "_return", "_pillar", "_minion_event",
                                                   "_file", "_mine",   "publish", "other"};
inline constexpr std::size_t kCountedCommandCount = std::size(kCountedCommands);
// Job cache write latency buckets (seconds, Prometheus "le" bounds).
inline constexpr double kLatencyBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,   0.25,   0.5,   1,    2.5};
inline constexpr std::size_t kLatencyBucketCount = std::size(kLatencyBuckets);

struct Counters {
  std::atomic<std::uint64_t> requests[kCountedCommandCount] = {};
  std::atomic<std::uint64_t> store_latency_buckets[kLatencyBucketCount] = {};
  std::atomic<std::uint64_t> store_latency_count{0};
  std::atomic<std::uint64_t> store_latency_sum_us{0};
  void CountRequest(std::string_view cmd);
  void ObserveStoreLatency(std::chrono::steady_clock::duration d);
  std::atomic<std::uint64_t> auth_accepted{0};
  std::atomic<std::uint64_t> auth_pending{0};
  std::atomic<std::uint64_t> auth_rejected{0};
  std::atomic<std::uint64_t> auth_denied{0};
  std::atomic<std::uint64_t> auth_errors{0};
  std::atomic<std::uint64_t> auth_shed{0};      // dropped: waited past auth_queue_timeout_ms
  std::atomic<std::uint64_t> auth_repeated{0};  // a retry answered as before (AuthReplies)
  // Minion requests dropped unanswered while this master's shared storage is lost.
  std::atomic<std::uint64_t> storage_shed{0};
  std::atomic<std::uint64_t> returns_stored{0};
  std::atomic<std::uint64_t> returns_duplicate{0};
  std::atomic<std::uint64_t> returns_failed{0};
  // Returns handed to the job cache and not yet durable or failed (held while it is down).
  std::atomic<std::int64_t> returns_in_flight{0};
  std::atomic<std::uint64_t> publishes{0};
  std::atomic<std::uint64_t> bad_requests{0};
  std::atomic<std::uint64_t> events_rejected{0};      // tag or fields not allowed
  std::atomic<std::uint64_t> events_rate_limited{0};  // over a per-request or per-minion limit
  std::atomic<std::uint64_t> events_too_large{0};     // over max_event_size after trimming
  // Refused before any handler ran (docs/security.md): an id-bound v2 command without a valid
  // tok, a protocol below minimum_request_version, a timestamp outside request_server_ttl, a
  // nonce already seen.
  std::atomic<std::uint64_t> refused_unsigned{0};
  std::atomic<std::uint64_t> refused_version{0};
  std::atomic<std::uint64_t> refused_stale{0};
  std::atomic<std::uint64_t> refused_replay{0};
  std::atomic<std::uint64_t> returns_refused{0};  // for a job that did not target the minion
  std::atomic<std::uint64_t> mine_refused{0};     // a `_mine` past mine_max_bytes
  std::atomic<std::uint64_t> auth_full{0};        // max_minions reached
  std::atomic<std::uint64_t> handler_exceptions{0};
};

class RecentJobs;  // targeting.h

// A setting that SIGHUP may replace while handlers run (MasterDaemon::Reload): readers get a
// snapshot that stays valid for as long as they hold it. `setting->field` holds the snapshot
// for the full expression; keep Get()'s result to use it across statements.
template <typename T>
class LiveSetting {
 public:
  std::shared_ptr<const T> Get() const { return value_.load(std::memory_order_acquire); }
  void Set(std::shared_ptr<const T> value) {
    value_.store(std::move(value), std::memory_order_release);
  }
  std::shared_ptr<const T> operator->() const { return Get(); }
  explicit operator bool() const { return Get() != nullptr; }

 private:
  std::atomic<std::shared_ptr<const T>> value_;
};

struct MasterContext {
  // config, pillar and auth_policy are what a reload replaces (the rest is fixed at start).
  LiveSetting<config::MasterConfig> config;
  keys::KeyStore* key_store = nullptr;  // pki_dir, or cluster_pki_dir in a cluster
  MinionKeys* minion_keys = nullptr;
  SessionKeys* session_keys = nullptr;
  AesKeyRing* aes = nullptr;
  const wire::RsaPrivateKey* signing_key = nullptr;  // master.pem, or cluster.pem
  std::string pub_key_text;                          // CleanKey(master.pub or cluster.pub)
  jobs::JobCache* job_cache = nullptr;
  jobs::JidGenerator* jids = nullptr;
  JobPublisher* publisher = nullptr;
  EventSink* events = nullptr;
  MinionData* minion_data = nullptr;
  LiveSetting<pillar::PillarCompiler> pillar;  // null: every minion gets an empty pillar
  LiveSetting<keys::AuthPolicyOptions> auth_policy;
  std::string root_key;  // <cachedir>/.root_key: what local CLIs must present
  // publisher_acl's users -> their keys (<cachedir>/.<user>_key): what those users' CLIs
  // present instead of the root key; their publishes are checked against publisher_acl.
  std::map<std::string, std::string> user_keys;
  // eauth tokens and external_auth (null: a publish with a `token` is refused). A publish
  // carrying a token is checked against the token's user's ACL here, on the master.
  auth::Authenticator* authenticator = nullptr;
  Counters* counters = nullptr;
  ReplayGuard* replay = nullptr;             // null: no nonce memory
  AuthReplies* auth_replies = nullptr;       // null: every sign-in does its RSA work
  EventRateLimiter* event_limits = nullptr;  // null: no per-minion event limit
  RecentJobs* recent_jobs = nullptr;         // null: every return reads its job
  Presence* presence = nullptr;              // null: no presence tracking
  FileHashes* file_hashes = nullptr;         // null: every _file_hash reads its file again
  MinionSlots* minion_slots = nullptr;       // null: a minion may hold every worker
  keys::KeyCounts* key_counts = nullptr;     // null: max_pending_keys is not applied, and
                                             // max_minions lists minions/ on each sign-in
  // True while the health check finds the shared folder or cachedir unusable: minion
  // requests (`_auth`, every aes request) are dropped unanswered, so minions time out and send
  // again on a new connection, which HAProxy gives to a master that can store (an answer
  // would be an error that loses the return). Local tools' commands still run. Null: never.
  const std::atomic<bool>* storage_lost = nullptr;
  // True while this master drains for cluster.leave: a minion's `_auth` (a new session) goes
  // unanswered, so it signs in again on a new connection, which HAProxy gives to another
  // master; requests of signed-in minions are still served. Null: never.
  const std::atomic<bool>* leaving = nullptr;
  // Cluster mode: a snapshot of the peer links for cluster.status; empty otherwise.
  std::function<wire::Value()> cluster_status;
  // publish.runner (peer.h): runs runner `fun` with parse_input'd `args` for minion
  // `requester` and gives the value salt-run would print; set by daemon/ (runners sit above
  // master). Null: every minion_runner is answered {}. Called on a worker; may block.
  std::function<Result<wire::Value>(const std::string& fun, const wire::Array& args,
                                    const std::string& requester)>
      peer_runner;
};

// Answers one request body (salt-wire 3.3); `reply` is called exactly once, possibly later
// from another thread (returns are acknowledged only once durable).
// `received` is when the request server read it: an `_auth` older than
// config->auth_queue_timeout_ms is dropped unanswered (reply("")). `peer`: the connection
// (its routing id), whose requests share one minion's share of the workers when no tok
// proves whose they are; empty: such requests are not limited.
void HandleRequest(
    MasterContext& ctx, std::string body, std::function<void(std::string)> reply,
    std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now(),
    std::string peer = "");

}  // namespace halite::master
