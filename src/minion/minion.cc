#include "halite/minion/minion.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>

#include "halite/minion/grains.h"
#include "halite/wire/encoding.h"
#include "minion_internal.h"

namespace halite::minion {

using wire::Value;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

using internal::DestroyLater;
using internal::Endpoint;

std::string_view Minion::StateName(State state) {
  switch (state) {
    case State::kCreated:
      return "created";
    case State::kLoadingKeys:
      return "loading-keys";
    case State::kSigningIn:
      return "signing-in";
    case State::kPending:
      return "pending";
    case State::kConnected:
      return "connected";
    case State::kRejected:
      return "rejected";
    case State::kFailed:
      return "failed";
    case State::kStopped:
      return "stopped";
  }
  return "?";
}

Result<std::shared_ptr<Minion>> Minion::Create(transport::ZmqLoop& loop, MinionEnv env,
                                               MinionOptions options) {
  HALITE_RETURN_IF_ERROR(ValidateOptions(options));
  if (env.context == nullptr || env.crypto_pool == nullptr || env.exec_pool == nullptr ||
      env.functions == nullptr || env.system_grains == nullptr) {
    return Error::InvalidArgument("MinionEnv is incomplete");
  }
  HALITE_ASSIGN_OR_RETURN(wire::OaepHash enc, wire::ParseEncAlgo(options.encryption_algorithm));
  HALITE_ASSIGN_OR_RETURN(wire::SigHash sig, wire::ParseSigAlgo(options.signing_algorithm));
  return std::shared_ptr<Minion>(new Minion(loop, std::move(env), std::move(options), enc, sig));
}

Minion::Minion(transport::ZmqLoop& loop, MinionEnv env, MinionOptions options, wire::OaepHash enc,
               wire::SigHash sig)
    : loop_(loop), env_(std::move(env)), options_(std::move(options)), enc_(enc), sig_(sig) {
  wait_ = options_.acceptance_wait_time;
}

Minion::~Minion() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (!stopped_) {
    stopped_ = true;
    LeaveState();
  }
  if (retry_timer_ != 0) loop_.CancelTimer(retry_timer_);
  for (RunningJob& job : jobs_) {
    job.cancelled->store(true);
    if (job.timeout_timer != 0) loop_.CancelTimer(job.timeout_timer);
  }
  ClosePublisher();
  auth_channel_.reset();
  channel_.reset();
}

void Minion::Count(std::atomic<std::uint64_t> MinionMetrics::*counter) {
  if (env_.metrics != nullptr) (env_.metrics->*counter).fetch_add(1, std::memory_order_relaxed);
}

void Minion::LeaveState() {
  if (env_.metrics == nullptr) return;
  MinionMetrics& m = *env_.metrics;
  switch (state_) {
    case State::kConnected:
      m.connected.fetch_sub(1, std::memory_order_relaxed);
      break;
    case State::kPending:
      m.pending.fetch_sub(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}

void Minion::SetState(State state) {
  if (state == state_) return;
  LeaveState();
  state_ = state;
  if (env_.metrics != nullptr) {
    MinionMetrics& m = *env_.metrics;
    switch (state) {
      case State::kConnected:
        m.connected.fetch_add(1, std::memory_order_relaxed);
        break;
      case State::kPending:
        m.pending.fetch_add(1, std::memory_order_relaxed);
        break;
      case State::kRejected:
        m.rejected.fetch_add(1, std::memory_order_relaxed);
        break;
      case State::kFailed:
        m.failed.fetch_add(1, std::memory_order_relaxed);
        break;
      default:
        break;
    }
  }
  if (on_state_) on_state_(state);
}

Value Minion::Grains() const {
  return MergeGrains(*env_.system_grains, options_.grains, options_.id);
}

// ---------------------------------------------------------------- start / stop

void Minion::Start() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (state_ != State::kCreated || stopped_) return;
  SetState(State::kLoadingKeys);
  token_ = wire::Crypticle::GenerateKeyString();
  std::filesystem::path pki_dir = options_.pki_dir;
  int bits = options_.keysize;
  transport::ZmqLoop& loop = loop_;
  env_.crypto_pool->Post([&loop, weak = weak_from_this(), pki_dir, bits] {
    auto keys = LoadOrCreateKeys(pki_dir, bits);
    auto pinned = ReadPinnedMasterKey(pki_dir);
    KeysLoaded loaded;
    if (!keys.ok()) {
      loaded.error = keys.error().ToString();
    } else if (!pinned.ok()) {
      loaded.error = pinned.error().ToString();
    } else {
      loaded.keys = std::make_shared<const MinionKeys>(std::move(keys).value());
      loaded.pinned = std::move(pinned).value();
      if (loaded.pinned) {
        auto key = wire::RsaPublicKey::FromPem(*loaded.pinned);
        if (key.ok()) {
          loaded.master_key = std::move(key).value();
        } else {
          loaded.error = (pki_dir / kMasterPubName).string() + ": " + key.error().message;
        }
      }
    }
    PostToMinion(loop, weak, [loaded = std::move(loaded)](Minion& m) { m.OnKeysLoaded(loaded); });
  });
}

void Minion::OnKeysLoaded(const KeysLoaded& loaded) {
  if (!loaded.error.empty()) {
    spdlog::error("minion {}: cannot load its keys: {}", options_.id, loaded.error);
    Shutdown();
    SetState(State::kFailed);
    return;
  }
  keys_ = loaded.keys;
  pinned_master_ = loaded.pinned;
  master_key_ = loaded.master_key;
  RequestChannel::Options channel;
  channel.endpoint = Endpoint(options_.master_ip, options_.master_port);
  channel.ipv6 = options_.master_ip.find(':') != std::string::npos;
  channel.idle_close = options_.request_idle_close;
  channel.timeout_counter = env_.metrics != nullptr ? &env_.metrics->request_timeouts : nullptr;
  channel_ = std::make_unique<RequestChannel>(loop_, *env_.context, channel);
  SetState(State::kSigningIn);
  Authenticate();
}

void Minion::Stop() {
  HALITE_DCHECK(loop_.IsCurrentThread());
  if (stopped_) return;
  Shutdown();
  if (state_ != State::kRejected && state_ != State::kFailed) SetState(State::kStopped);
}

void Minion::Shutdown() {
  stopped_ = true;
  if (retry_timer_ != 0) loop_.CancelTimer(retry_timer_);
  retry_timer_ = 0;
  for (RunningJob& job : jobs_) {
    job.cancelled->store(true);
    if (job.timeout_timer != 0) loop_.CancelTimer(job.timeout_timer);
  }
  jobs_.clear();
  frames_awaiting_auth_.clear();
  auth_waiters_.clear();
  ClosePublisher();
  DestroyLater(loop_, auth_channel_);
  DestroyLater(loop_, channel_);
}

// ---------------------------------------------------------------- sign-in

void Minion::Authenticate(AuthWaiter waiter) {
  if (stopped_) return;
  if (waiter) auth_waiters_.push_back(std::move(waiter));
  if (auth_in_flight_ || !keys_) return;
  auth_in_flight_ = true;
  if (retry_timer_ != 0) loop_.CancelTimer(retry_timer_);
  retry_timer_ = 0;
  Count(&MinionMetrics::auth_attempts);

  AuthRequestParams params;
  params.id = options_.id;
  params.public_pem = keys_->public_pem;
  params.enc = enc_;
  params.sig = sig_;
  params.version = options_.request_protocol_version;
  params.master_key = master_key_ ? &*master_key_ : nullptr;
  params.token = token_;
  std::string nonce = wire::RandomNonce();
  auto request = BuildAuthRequest(params, nonce);
  if (!request.ok()) {
    spdlog::error("minion {}: cannot build the sign-in request: {}", options_.id,
                  request.error().ToString());
    FinishAuth(false);
    ScheduleSignInRetry();
    return;
  }
  // Sign-ins use their own connection, as Salt's do, so they never wait behind a request.
  RequestChannel::Options channel;
  channel.endpoint = Endpoint(options_.master_ip, options_.master_port);
  channel.ipv6 = options_.master_ip.find(':') != std::string::npos;
  channel.timeout_counter = env_.metrics != nullptr ? &env_.metrics->request_timeouts : nullptr;
  DestroyLater(loop_, auth_channel_);
  auth_channel_ = std::make_unique<RequestChannel>(loop_, *env_.context, channel);
  RequestChannel::Request r;
  r.body = wire::Pack(*request);
  r.timeout = options_.auth_timeout;
  r.tries = options_.auth_tries;
  bool token_sent = params.master_key != nullptr;
  r.done = [weak = weak_from_this(), nonce, token_sent](Result<std::string> reply) {
    std::shared_ptr<Minion> self = weak.lock();
    if (self && !self->stopped_) self->OnAuthReply(nonce, token_sent, std::move(reply));
  };
  auth_channel_->Send(std::move(r));
}

void Minion::OnAuthReply(std::string nonce, bool token_sent, Result<std::string> reply) {
  DestroyLater(loop_, auth_channel_);
  if (!reply.ok()) {
    spdlog::warn("minion {}: sign-in failed: {}", options_.id, reply.error().ToString());
    Count(&MinionMetrics::auth_errors);
    FinishAuth(false);
    ScheduleSignInRetry();
    return;
  }
  auto decoded = wire::Unpack(*reply);
  if (!decoded.ok()) {
    spdlog::error("minion {}: sign-in reply is not msgpack: {}", options_.id,
                  decoded.error().ToString());
    Count(&MinionMetrics::auth_errors);
    FinishAuth(false);
    ScheduleSignInRetry();
    return;
  }
  transport::ZmqLoop& loop = loop_;
  env_.crypto_pool->Post([&loop, weak = weak_from_this(), keys = keys_, pinned = pinned_master_,
                          token = token_, nonce = std::move(nonce), token_sent, enc = enc_,
                          sig = sig_, v3 = options_.request_protocol_version >= 3,
                          pki_dir = options_.pki_dir, value = std::move(decoded).value()] {
    AuthVerifyParams p;
    p.minion_key = &keys->private_key;
    p.pinned_master_pub = pinned ? &*pinned : nullptr;
    p.token_sent = token_sent;
    p.token = token;
    p.nonce = nonce;
    p.enc = enc;
    p.sig = sig;
    p.require_session = v3;
    AuthOutcome outcome{VerifyAuthReply(value, p), std::nullopt};
    if (outcome.reply.ok() && outcome.reply->status == AuthStatus::kAccepted) {
      const AuthCreds& creds = outcome.reply->creds;
      if (creds.pin_master_key) {
        Status written = WritePinnedMasterKey(pki_dir, creds.master_pub);
        if (!written.ok()) {
          spdlog::warn("cannot write {}: {}", (pki_dir / kMasterPubName).string(),
                       written.error().ToString());
        }
      }
      auto key = wire::RsaPublicKey::FromPem(creds.master_pub);
      if (key.ok()) outcome.master_key = std::move(key).value();
    }
    PostToMinion(loop, weak,
                 [outcome = std::move(outcome)](Minion& m) { m.OnAuthResult(outcome); });
  });
}

void Minion::OnAuthResult(const AuthOutcome& outcome) {
  if (!outcome.reply.ok()) {
    spdlog::error("minion {}: sign-in reply refused: {}", options_.id,
                  outcome.reply.error().ToString());
    Count(&MinionMetrics::auth_errors);
    FinishAuth(false);
    ScheduleSignInRetry();
    return;
  }
  const AuthReply& reply = *outcome.reply;
  switch (reply.status) {
    case AuthStatus::kAccepted: {
      const AuthCreds& creds = reply.creds;
      auto aes = wire::Crypticle::FromKeyString(creds.aes);
      std::optional<wire::Crypticle> session;
      if (!creds.session.empty()) {
        auto s = wire::Crypticle::FromKeyString(creds.session);
        if (s.ok()) session = std::move(s).value();
      }
      if (!aes.ok() || !outcome.master_key) {
        spdlog::error("minion {}: sign-in reply has unusable keys", options_.id);
        Count(&MinionMetrics::auth_errors);
        FinishAuth(false);
        ScheduleSignInRetry();
        return;
      }
      if (!aes_ || aes_->key_string() != aes->key_string()) {
        if (aes_) spdlog::info("minion {}: the master's aes key has changed", options_.id);
        aes_ = std::move(aes).value();
        serial_guard_.Reset();
      }
      session_ = std::move(session);
      if (creds.pin_master_key) pinned_master_ = creds.master_pub;
      master_key_ = outcome.master_key;
      std::uint16_t port = options_.publish_port != 0 ? options_.publish_port : creds.publish_port;
      bool reconnect = !sub_ || port != publish_port_;
      publish_port_ = port;
      wait_ = options_.acceptance_wait_time;
      spdlog::debug("minion {}: signed in", options_.id);
      SetState(State::kConnected);
      if (stopped_) return;  // the state callback stopped us
      if (reconnect) ConnectPublisher();
      bool first = !signed_in_once_;
      signed_in_once_ = true;
      FinishAuth(true);
      if (first && !stopped_) OnFirstSignIn();
      return;
    }
    case AuthStatus::kPending:
    case AuthStatus::kFull:
      spdlog::info(
          "minion {}: the master {} this minion's key; retrying in {} ms", options_.id,
          reply.status == AuthStatus::kFull ? "is full and did not accept" : "has cached (pending)",
          wait_.count());
      if (reply.status == AuthStatus::kPending) {
        SetState(State::kPending);
        FinishAuth(false);
      } else {
        // "full": the master could not take the sign-in now (max_minions, or its key store
        // failed). Salt's AsyncAuth treats it as "retry" and keeps the caller waiting, so a
        // return whose re-auth got "full" is sent once the retry succeeds (on the master
        // HAProxy gives the new connection), not given up.
        auth_in_flight_ = false;
      }
      ScheduleSignInRetry();
      return;
    case AuthStatus::kRejected:
      if (options_.rejected_retry) {
        spdlog::error("minion {}: the master has rejected this minion's key; retrying",
                      options_.id);
        SetState(State::kPending);
        FinishAuth(false);
        ScheduleSignInRetry();
        return;
      }
      spdlog::critical(
          "minion {}: the master has rejected this minion's public key. To repair this, delete "
          "the key of this minion on the master and restart the minion. Stopping.",
          options_.id);
      FinishAuth(false);
      Shutdown();
      SetState(State::kRejected);
      return;
    case AuthStatus::kBadEncAlgo:
    case AuthStatus::kBadSigAlgo:
      spdlog::error(
          "minion {}: this minion uses an {} algorithm ({}) its master does not support; check "
          "the minion configuration",
          options_.id, reply.status == AuthStatus::kBadEncAlgo ? "encryption" : "signing",
          reply.status == AuthStatus::kBadEncAlgo ? options_.encryption_algorithm
                                                  : options_.signing_algorithm);
      Count(&MinionMetrics::auth_errors);
      FinishAuth(false);
      ScheduleSignInRetry();
      return;
  }
}

void Minion::FinishAuth(bool ok) {
  auth_in_flight_ = false;
  std::vector<AuthWaiter> waiters;
  waiters.swap(auth_waiters_);
  for (AuthWaiter& w : waiters) {
    if (stopped_) return;
    w(ok);
  }
}

void Minion::ScheduleSignInRetry() {
  if (stopped_) return;
  if (retry_timer_ != 0) loop_.CancelTimer(retry_timer_);
  std::chrono::milliseconds wait = wait_;
  if (options_.acceptance_wait_time_max > wait_) {
    wait_ = std::min(wait_ * 2, options_.acceptance_wait_time_max);
  }
  retry_timer_ = loop_.RunAfter(wait, [weak = weak_from_this()] {
    std::shared_ptr<Minion> self = weak.lock();
    if (!self || self->stopped_) return;
    self->retry_timer_ = 0;
    self->Authenticate();
  });
}

void Minion::OnFirstSignIn() {
  if (options_.fetch_pillar) {
    FetchPillar();
  } else {
    SendStartEvents();
  }
}

// ---------------------------------------------------------------- requests

void Minion::SendAes(Value load, ReqKind kind, std::function<void(Result<Value>)> done,
                     bool resent) {
  if (stopped_) return;
  const bool v3 = options_.request_protocol_version >= 3;
  const std::optional<wire::Crypticle>& key = v3 ? session_ : aes_;
  if (!key || !channel_) {
    Authenticate(
        [weak = weak_from_this(), load = std::move(load), kind, done, resent](bool ok) mutable {
          std::shared_ptr<Minion> self = weak.lock();
          if (!self) return;
          if (!ok) {
            if (done) done(Error::Unavailable("not signed in"));
            return;
          }
          self->SendAes(std::move(load), kind, std::move(done), resent);
        });
    return;
  }
  RequestKeys keys;
  keys.version = v3 ? 3 : 2;
  keys.key = &*key;
  keys.id = options_.id;
  keys.tok = keys_->tok;
  keys.enc_algo = options_.encryption_algorithm;
  keys.sig_algo = options_.signing_algorithm;
  EncodedRequest encoded = EncodeRequest(load, keys);

  RequestChannel::Request r;
  r.body = std::move(encoded.body);
  if (kind == ReqKind::kReturn) {
    r.timeout = options_.return_retry_timer;
    r.timeout_max = options_.return_retry_timer_max;
    r.tries = options_.return_retry_tries;
  } else {
    r.timeout = options_.request_timeout;
    r.tries = options_.request_tries;
  }
  r.done = [weak = weak_from_this(), crypticle = *key, nonce = std::move(encoded.nonce),
            load = std::move(load), kind, done = std::move(done),
            resent](Result<std::string> reply) mutable {
    std::shared_ptr<Minion> self = weak.lock();
    if (!self || self->stopped_) return;
    self->OnAesReply(std::move(reply), crypticle, nonce, std::move(load), kind, std::move(done),
                     resent);
  };
  channel_->Send(std::move(r));
}

void Minion::OnAesReply(Result<std::string> reply, const wire::Crypticle& crypticle,
                        const std::string& nonce, Value load, ReqKind kind,
                        std::function<void(Result<Value>)> done, bool resent) {
  if (!reply.ok()) {
    if (done) done(std::move(reply).error());
    return;
  }
  // Salt: a reply that does not open means the keys are stale: re-auth, then resend once.
  auto resend = [this, &load, kind, &done, resent](const Error& error) {
    if (resent) {
      if (done) done(error);
      return;
    }
    spdlog::info("minion {}: {}; signing in again", options_.id, error.message);
    Count(&MinionMetrics::reauths);
    Authenticate([weak = weak_from_this(), load = std::move(load), kind,
                  done = std::move(done)](bool ok) mutable {
      std::shared_ptr<Minion> self = weak.lock();
      if (!self) return;
      if (!ok) {
        if (done) done(Error::Unavailable("sign-in failed"));
        return;
      }
      self->SendAes(std::move(load), kind, std::move(done), /*resent=*/true);
    });
  };

  if (kind != ReqKind::kPillar) {
    auto value = DecodeReply(*reply, crypticle, nonce);
    if (!value.ok()) {
      resend(value.error());
      return;
    }
    if (done) done(std::move(value).value());
    return;
  }

  auto frame = wire::Unpack(*reply);
  if (!frame.ok() || !frame->is_map() || frame->Find("key") == nullptr) {
    resend(Error::FailedPrecondition("pillar reply has no key"));
    return;
  }
  if (!master_key_) {
    if (done) done(Error::FailedPrecondition("no master key"));
    return;
  }
  transport::ZmqLoop& loop = loop_;
  env_.crypto_pool->Post([&loop, weak = weak_from_this(), keys = keys_, master = *master_key_,
                          enc = enc_, sig = sig_, frame = std::move(frame).value(), nonce,
                          load = std::move(load), done = std::move(done), resent]() mutable {
    auto pillar = OpenPillarReply(frame, keys->private_key, enc, master, sig, nonce);
    PostToMinion(
        loop, weak,
        [pillar = std::move(pillar), load = std::move(load), done = std::move(done),
         resent](Minion& m) mutable {
          if (!pillar.ok() && !resent && pillar.error().code == ErrorCode::kUnauthenticated) {
            spdlog::info("minion {}: {}; signing in again", m.options_.id, pillar.error().message);
            m.Count(&MinionMetrics::reauths);
            m.Authenticate(
                [weak = m.weak_from_this(), load = std::move(load), done](bool ok) mutable {
                  std::shared_ptr<Minion> self = weak.lock();
                  if (!self) return;
                  if (!ok) {
                    if (done) done(Error::Unavailable("sign-in failed"));
                    return;
                  }
                  self->SendAes(std::move(load), ReqKind::kPillar, std::move(done), true);
                });
            return;
          }
          if (done) done(std::move(pillar));
        });
  });
}

void Minion::FetchPillar() {
  SendAes(BuildPillarLoad(options_.id, Grains()), ReqKind::kPillar,
          [weak = weak_from_this()](Result<Value> pillar) {
            std::shared_ptr<Minion> self = weak.lock();
            if (!self || self->stopped_) return;
            if (pillar.ok()) {
              self->pillar_ = std::move(pillar).value();
            } else {
              spdlog::warn("minion {}: cannot fetch its pillar: {}", self->options_.id,
                           pillar.error().ToString());
              self->Count(&MinionMetrics::request_errors);
            }
            self->SendStartEvents();
          });
}

void Minion::SendStartEvents() {
  if (!options_.send_start_events) return;
  std::string text = StartEventText(options_.id);
  for (std::string tag : {std::string("minion_start"), "salt/minion/" + options_.id + "/start"}) {
    SendAes(BuildEventLoad(options_.id, keys_->tok, tag, text), ReqKind::kGeneric,
            [weak = weak_from_this(), tag](Result<Value> r) {
              std::shared_ptr<Minion> self = weak.lock();
              if (!self || r.ok()) return;
              spdlog::warn("minion {}: cannot fire {}: {}", self->options_.id, tag,
                           r.error().ToString());
              self->Count(&MinionMetrics::request_errors);
            });
  }
}

}  // namespace halite::minion
