// The minion runtime: one Minion is one Salt minion (sign-in, request channel, publish
// subscription, jobs) living on a ZmqLoop supplied by the caller, so that one loop thread can
// carry thousands of minions (halite-swarm). Nothing blocks the loop: RSA work and key files go
// to MinionEnv::crypto_pool, blocking job functions to MinionEnv::exec_pool, and results come
// back through loop.Post.
//
// Life of a minion (salt-wire.md 2.4, 4.5-4.8, 5.3, 7.5): load or create its keys -> _auth
// (pending keys retry with back-off; a rejected key stops the minion unless rejected_retry) ->
// SUB to the publisher -> _pillar -> start events -> for each publish: decrypt (serial replay
// guard), match the target, run the function with a timeout, send _return with retries.
// A publish or reply that does not decrypt triggers one re-auth and one retry (master
// restarts and key rotations).
//
// Threads: Create, Start, Stop and the last release of the shared_ptr happen on the loop
// thread. MinionMetrics may be read from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/common/result.h"
#include "halite/minion/functions.h"
#include "halite/minion/journal.h"
#include "halite/minion/keys.h"
#include "halite/minion/options.h"
#include "halite/minion/protocol.h"
#include "halite/minion/request_channel.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/rsa.h"

namespace halite::minion {

// Counters shared by many minions (relaxed atomics). Gauges go up and down with states.
struct MinionMetrics {
  std::atomic<std::int64_t> connected{0};  // gauge: signed in with valid keys
  std::atomic<std::int64_t> pending{0};    // gauge: key pending on the master
  std::atomic<std::int64_t> rejected{0};   // gauge: key rejected (minion stopped)
  std::atomic<std::int64_t> failed{0};     // gauge: could not start (keys)
  std::atomic<std::uint64_t> auth_attempts{0};
  std::atomic<std::uint64_t> auth_errors{0};  // sign-ins that timed out or failed a check
  std::atomic<std::uint64_t> reauths{0};      // re-auths after a failed decrypt
  std::atomic<std::uint64_t> publishes{0};    // publish frames received
  std::atomic<std::uint64_t> publish_errors{0};
  std::atomic<std::uint64_t> jobs_seen{0};     // jobs that targeted a minion
  std::atomic<std::uint64_t> returns_sent{0};  // _return acknowledged by the master
  std::atomic<std::uint64_t> return_errors{0};
  std::atomic<std::uint64_t> request_errors{0};    // _pillar / _minion_event failures
  std::atomic<std::uint64_t> request_timeouts{0};  // single tries that timed out
};

// What minions share; everything outlives them.
struct MinionEnv {
  zmq::context_t* context = nullptr;
  transport::WorkerPool* crypto_pool = nullptr;  // RSA and key files
  transport::WorkerPool* exec_pool = nullptr;    // RunOn::kWorker functions (may equal crypto)
  std::shared_ptr<const FunctionTable> functions;
  std::shared_ptr<const wire::Value> system_grains;  // SystemGrains(), read once
  MinionMetrics* metrics = nullptr;                  // optional
  // Optional. When set, each minion also watches its publish subscription (a socket monitor:
  // one more inproc socket per minion) to report when it comes up and goes down.
  JobJournal* journal = nullptr;
};

class Minion : public std::enable_shared_from_this<Minion> {
 public:
  enum class State {
    kCreated,
    kLoadingKeys,
    kSigningIn,  // first sign-in in progress (or retrying after an error)
    kPending,    // key pending on the master, retrying with back-off
    kConnected,  // signed in
    kRejected,   // key rejected: stopped
    kFailed,     // cannot run (keys unreadable): stopped
    kStopped,
  };
  static std::string_view StateName(State state);

  // Error::InvalidArgument for invalid options or an incomplete env.
  static Result<std::shared_ptr<Minion>> Create(transport::ZmqLoop& loop, MinionEnv env,
                                                MinionOptions options);
  ~Minion();
  Minion(const Minion&) = delete;
  Minion& operator=(const Minion&) = delete;

  // Loop thread. Start once. Stop cancels what is pending and hands the sockets to tasks it
  // posts to the loop, which close them (a Stop may come from inside a socket's callback); let
  // the loop run those (ZmqLoop::Stop does) before the context is closed. Idempotent.
  void Start();
  void Stop();

  State state() const { return state_; }
  const std::string& id() const { return options_.id; }
  // Loop thread. Called on every state change (e.g. halite-minion exits on kRejected).
  void OnStateChange(std::function<void(State)> fn) { on_state_ = std::move(fn); }

  // The grains this minion reports: system grains, static grains, id.
  wire::Value Grains() const;
  // The pillar fetched at start (an empty map until then).
  const wire::Value& pillar() const { return pillar_; }
  std::size_t running_jobs() const { return jobs_.size(); }

 private:
  struct RunningJob {
    std::string jid;
    wire::Value load;  // the publish load (find_job, return fields)
    std::shared_ptr<std::atomic<bool>> cancelled;
    transport::ZmqLoop::TimerId timeout_timer = 0;
  };
  enum class ReqKind { kGeneric, kPillar, kReturn };
  using AuthWaiter = std::function<void(bool signed_in)>;
  struct KeysLoaded {
    std::string error;  // empty: ok
    std::shared_ptr<const MinionKeys> keys;
    std::optional<std::string> pinned;
    std::optional<wire::RsaPublicKey> master_key;
  };
  struct AuthOutcome {
    Result<AuthReply> reply;
    std::optional<wire::RsaPublicKey> master_key;  // parsed pub_key when accepted
  };
  template <typename Fn>
  friend void PostToMinion(transport::ZmqLoop& loop, std::weak_ptr<Minion> weak, Fn fn);

  Minion(transport::ZmqLoop& loop, MinionEnv env, MinionOptions options, wire::OaepHash enc,
         wire::SigHash sig);

  void SetState(State state);
  void LeaveState();  // gauge bookkeeping
  void Count(std::atomic<std::uint64_t> MinionMetrics::*counter);
  void Shutdown();  // closes everything; stopped_ afterwards
  void OnKeysLoaded(const KeysLoaded& loaded);

  // Sign-in. `waiter` (optional) runs when it ends; concurrent calls share one sign-in.
  void Authenticate(AuthWaiter waiter = nullptr);
  void OnAuthReply(std::string nonce, bool token_sent, Result<std::string> reply);
  void OnAuthResult(const AuthOutcome& outcome);
  void FinishAuth(bool ok);
  void ScheduleSignInRetry();
  void OnFirstSignIn();

  // Encrypted requests; `resent` marks the one resend after a re-auth (5.3).
  void SendAes(wire::Value load, ReqKind kind, std::function<void(Result<wire::Value>)> done,
               bool resent = false);
  void OnAesReply(Result<std::string> reply, const wire::Crypticle& crypticle,
                  const std::string& nonce, wire::Value load, ReqKind kind,
                  std::function<void(Result<wire::Value>)> done, bool resent);
  void FetchPillar();
  void SendStartEvents();

  void ConnectPublisher();
  void ClosePublisher();
  void WatchPublisherConnection();  // journal only
  void OnPublisherMonitorReadable();
  void OnPublishReadable();
  void HandlePublish(std::string frame, bool after_reauth);
  void HandleJob(wire::Value load);
  bool SeenJid(std::string_view jid);

  void StartJob(wire::Value load, std::string jid);
  void CompleteJob(const std::string& jid, FunctionResult result);
  void FinishJob(const std::string& jid, const JobResult& result);
  RunningJob* FindJob(std::string_view jid);
  wire::Value FindJobInfo(std::string_view jid) const;

  transport::ZmqLoop& loop_;
  MinionEnv env_;
  MinionOptions options_;
  wire::OaepHash enc_;
  wire::SigHash sig_;
  State state_ = State::kCreated;
  std::function<void(State)> on_state_;
  bool stopped_ = false;

  std::shared_ptr<const MinionKeys> keys_;
  std::optional<std::string> pinned_master_;      // minion_master.pub text
  std::optional<wire::RsaPublicKey> master_key_;  // parsed pinned key
  std::string token_;                             // sign-in token (4.5.1)
  std::optional<wire::Crypticle> aes_;
  std::optional<wire::Crypticle> session_;
  wire::Crypticle::SerialGuard serial_guard_;
  std::uint16_t publish_port_ = 0;

  std::unique_ptr<RequestChannel> channel_;       // aes requests
  std::unique_ptr<RequestChannel> auth_channel_;  // one sign-in, then dropped
  std::unique_ptr<zmq::socket_t> sub_;
  transport::ZmqLoop::WatchId sub_watch_ = 0;
  std::unique_ptr<zmq::socket_t> sub_monitor_;  // PAIR: sub_'s monitor events (journal only)
  transport::ZmqLoop::WatchId sub_monitor_watch_ = 0;
  bool sub_up_ = false;  // journal only: a handshake completed and no disconnect since

  bool auth_in_flight_ = false;
  bool signed_in_once_ = false;
  std::vector<AuthWaiter> auth_waiters_;
  std::chrono::milliseconds wait_{0};  // current back-off
  transport::ZmqLoop::TimerId retry_timer_ = 0;
  std::vector<std::string> frames_awaiting_auth_;  // publishes to retry after a re-auth

  std::array<std::uint64_t, 100> seen_jids_{};  // hashes, ring (minion_jid_queue_hwm)
  std::uint8_t seen_next_ = 0;
  std::vector<RunningJob> jobs_;
  wire::Value pillar_ = wire::Value::EmptyMap();
};

}  // namespace halite::minion
