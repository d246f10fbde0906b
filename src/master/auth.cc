// salt-wire 4.5: the `_auth` handshake. The RSA private operations are the unavoidable cost
// (token decryption and the reply signature); the X9.31 `sig` over the AES key is cached per
// key, parsed minion keys are cached by MinionKeys (which also parses `pub` for DecideAuth, so
// a sign-in decodes its PEM at most once), EVP contexts per thread (wire/rsa.h).
#include <spdlog/spdlog.h>

#include <mutex>

#include "halite/common/logging.h"
#include "halite/keys/auth_policy.h"
#include "halite/master/auth_replies.h"
#include "halite/master/handlers.h"
#include "halite/wire/encoding.h"
#include "halite/wire/rsa.h"

namespace halite::master {

namespace {

// X931-sign(hex(sha256(aes key string))): deterministic per AES key, so computed once.
class AesSigCache {
 public:
  Result<std::string> Get(const wire::RsaPrivateKey& signer, const std::string& key_string) {
    {
      std::lock_guard lock(mu_);
      if (key_string == key_) return sig_;
    }
    HALITE_ASSIGN_OR_RETURN(std::string sig, signer.X931Sign(wire::Sha256Hex(key_string)));
    std::lock_guard lock(mu_);
    key_ = key_string;
    sig_ = sig;
    return sig;
  }

 private:
  std::mutex mu_;
  std::string key_ HALITE_GUARDED_BY(mu_);
  std::string sig_ HALITE_GUARDED_BY(mu_);
};

AesSigCache& SigCache() {
  static AesSigCache* cache = new AesSigCache();  // process-wide, never destroyed
  return *cache;
}

wire::Value RetMap(wire::Value ret, const std::string* nonce) {
  wire::Value m = wire::Value::MapOf({{"ret", std::move(ret)}});
  if (nonce) m.Set("nonce", *nonce);
  return m;
}

// The reply frame: the clear load for v1, else the packed load with the master's signature.
std::string SignedReply(const MasterContext& ctx, const wire::Value& inner, int version,
                        wire::SigHash sig_algo) {
  if (version <= 1) return wire::Pack(wire::Value::MapOf({{"enc", "clear"}, {"load", inner}}));
  std::string inner_bytes = wire::Pack(inner);
  auto sig = ctx.signing_key->Sign(inner_bytes, sig_algo);
  if (!sig.ok()) {
    spdlog::error("cannot sign auth reply: {}", sig.error().ToString());
    return PackPlain("Server-side exception handling payload");
  }
  return wire::Pack(wire::Value::MapOf(
      {{"enc", "clear"}, {"load", std::move(inner_bytes)}, {"sig", std::move(*sig)}}));
}

void FireAuthEvent(MasterContext& ctx, const std::string& id, const std::string* pub, bool result,
                   const std::string& act) {
  if (!ctx.config->auth_events) return;
  wire::Value data = wire::Value::MapOf({{"result", result}});
  if (!act.empty()) data.Set("act", act);
  data.Set("id", id);
  data.Set("pub", pub ? *pub : std::string());
  ctx.events->Fire("salt/auth", std::move(data));
}

// What an answer to `id` given now would carry (AuthReplies::Basis); none if `id` has no
// accepted key or no usable session key.
std::optional<AuthReplies::Basis> CurrentBasis(MasterContext& ctx, const std::string& id) {
  auto accepted = ctx.minion_keys->Lookup(id);
  if (!accepted.ok()) return std::nullopt;
  auto session = ctx.session_keys->Get(id, accepted->stamp);
  if (!session.ok()) return std::nullopt;
  return AuthReplies::Basis{accepted->stamp, ctx.aes->Current()->key_string(),
                            (*session)->key_string()};
}

// A retry of a sign-in answered before (AuthReplies): the same answer, if what it carries is
// still current. False: no such answer, or a stale one (dropped); sign in afresh.
bool AnswerRetry(MasterContext& ctx, const std::string& id, const std::string& pub,
                 const std::string& digest, const std::function<void(std::string)>& reply) {
  auto kept = ctx.auth_replies->Find(digest);
  if (!kept) return false;
  auto basis = CurrentBasis(ctx, id);
  if (!basis || !(*basis == kept->basis)) {
    ctx.auth_replies->Drop(digest);
    return false;
  }
  ctx.counters->auth_repeated++;
  if (ctx.presence) ctx.presence->Seen(id);
  spdlog::debug("auth of {}: a retry, answered as before", id);
  FireAuthEvent(ctx, id, &pub, true, "accept");
  reply(std::move(kept->reply));
  return true;
}

}  // namespace

void HandleAuth(MasterContext& ctx, const wire::Value& load, int version,
                std::chrono::steady_clock::duration waited,
                std::function<void(std::string)> reply) {
  const std::string* id = load.FindStr("id");
  const std::string* pub = load.FindStr("pub");
  const std::string* nonce = load.FindStr("nonce");
  const std::string* enc_name = load.FindStr("enc_algo");
  const std::string* sig_name = load.FindStr("sig_algo");
  auto enc_algo = wire::ParseEncAlgo(enc_name ? *enc_name : "OAEP-SHA1");
  if (!enc_algo.ok()) {
    reply(wire::Pack(wire::Value::MapOf(
        {{"enc", "clear"}, {"load", wire::Value::MapOf({{"ret", "bad enc algo"}})}})));
    return;
  }
  auto sig_algo = wire::ParseSigAlgo(sig_name ? *sig_name : "PKCS1v15-SHA1");
  if (!sig_algo.ok()) {
    reply(wire::Pack(wire::Value::MapOf(
        {{"enc", "clear"}, {"load", wire::Value::MapOf({{"ret", "bad sig algo"}})}})));
    return;
  }
  auto send_signed = [&](const wire::Value& inner) {
    reply(SignedReply(ctx, inner, version, *sig_algo));
  };
  auto fire = [&](bool result, const std::string& act) {
    if (id) FireAuthEvent(ctx, *id, pub, result, act);
  };

  if (!id || !pub || !keys::ValidMinionId(*id)) {
    ctx.counters->auth_rejected++;
    spdlog::info("auth: refused a sign-in with a missing or invalid id");
    send_signed(RetMap(false, nonce));
    return;
  }
  // The same request again (its minion gave up waiting and resent it): answered as before,
  // with no RSA, when that answer was kept.
  std::string digest;
  if (ctx.auth_replies) {
    digest = AuthReplies::Digest(*id, version, wire::Pack(load));
    if (AnswerRetry(ctx, *id, *pub, digest, reply)) return;
  }
  // Salt's max_minions: a minion that is not accepted yet is told "full" (it retries). The
  // accepted keys are counted by key_counts, not listed for every stranger's sign-in (with
  // 100,000 keys that held a worker for about a second each). A place is taken before the
  // decision and given back unless the key was accepted, so that sign-ins running at once
  // cannot pass the limit together.
  bool took_place = false;
  if (ctx.config->max_minions > 0 && !ctx.minion_keys->Get(*id).ok()) {
    const auto max = static_cast<std::size_t>(ctx.config->max_minions);
    Result<bool> room = true;  // a store error is left to the decision below
    if (ctx.key_counts) {
      room = ctx.key_counts->TryAdd(*ctx.key_store, keys::KeyState::kAccepted, max);
      took_place = room.ok() && *room;
    } else if (auto ids = ctx.key_store->List(keys::KeyState::kAccepted); ids.ok()) {
      room = ids->size() < max;
    }
    if (room.ok() && !*room) {
      ctx.counters->auth_full++;
      static LogLimiter limiter(std::chrono::seconds(10));
      if (auto suppressed = limiter.Pass()) {
        spdlog::warn("auth of {}: max_minions ({}) keys are accepted; answered \"full\"{}", *id,
                     max, SuppressedSuffix(*suppressed));
      }
      fire(false, "");
      send_signed(RetMap("full", nonce));
      return;
    }
  }
  // No policy set (a context built by hand): every new key waits for an operator.
  static const keys::AuthPolicyOptions kNoAutoAccept;
  const auto policy = ctx.auth_policy.Get();
  // The key is parsed at most once per sign-in, and not at all for one already cached.
  auto decision = keys::DecideAuth(
      *ctx.key_store, policy ? *policy : kNoAutoAccept, *id, *pub,
      [&](std::string_view pem) { return ctx.minion_keys->Parse(*id, pem); }, ctx.key_counts);
  if (took_place && !(decision.ok() && decision->verdict == keys::AuthVerdict::kAccepted)) {
    ctx.key_counts->GiveBack(keys::KeyState::kAccepted);
  }
  if (!decision.ok()) {
    // A storage problem is ours, not the minion's: "full" makes it retry later instead of
    // exiting as it would on ret: False.
    ctx.counters->auth_errors++;
    spdlog::error("auth of {}: key store error: {}", *id, decision.error().ToString());
    send_signed(RetMap("full", nonce));
    return;
  }
  if (decision->full) {
    // Strangers can send new ids without end: past max_pending_keys none is recorded, and
    // the minion is told "full" (it retries, as for max_minions).
    ctx.counters->auth_full++;
    static LogLimiter limiter(std::chrono::seconds(10));
    if (auto suppressed = limiter.Pass()) {
      spdlog::warn(
          "auth of {}: {}; answered \"full\" (accept or delete pending keys with "
          "halite-key){}",
          *id, decision->reason, SuppressedSuffix(*suppressed));
    }
    send_signed(RetMap("full", nonce));
    return;
  }
  if (decision->verdict != keys::AuthVerdict::kAccepted) {
    switch (decision->verdict) {
      case keys::AuthVerdict::kPending:
        ctx.counters->auth_pending++;
        spdlog::info("auth of {}: key pending; accept it with halite-key -a {}", *id, *id);
        break;
      case keys::AuthVerdict::kDenied:
        ctx.counters->auth_denied++;
        spdlog::warn("auth of {}: key differs from the accepted one; recorded as denied", *id);
        break;
      default:
        ctx.counters->auth_rejected++;
        spdlog::info("auth of {}: rejected ({})", *id, decision->reason);
    }
    fire(decision->result, decision->act);
    send_signed(RetMap(decision->result, nonce));
    return;
  }

  auto accepted = ctx.minion_keys->Lookup(*id);
  if (!accepted.ok()) {
    ctx.counters->auth_errors++;
    spdlog::error("auth of {}: accepted key unusable: {}", *id, accepted.error().ToString());
    send_signed(RetMap(false, nonce));
    return;
  }
  const wire::RsaPublicKey* minion_pub = &accepted->key;
  auto session = ctx.session_keys->Get(*id, accepted->stamp);
  if (!session.ok()) {
    ctx.counters->auth_errors++;
    spdlog::error("auth of {}: session key: {}", *id, session.error().ToString());
    send_signed(RetMap("full", nonce));
    return;
  }
  CrypticlePtr aes = ctx.aes->Current();
  wire::Value ret = wire::Value::MapOf(
      {{"enc", "pub"}, {"pub_key", ctx.pub_key_text}, {"publish_port", ctx.config->publish_port}});
  if (const std::string* token = load.FindStr("token")) {
    auto plain = ctx.signing_key->Decrypt(*token, *enc_algo);
    if (plain.ok()) {
      auto back = minion_pub->Encrypt(*plain, *enc_algo);
      if (back.ok()) ret.Set("token", std::move(*back));
    } else {
      spdlog::warn("auth of {}: token does not decrypt with our key: {}", *id,
                   plain.error().message);
    }
  }
  auto aes_ct = minion_pub->Encrypt(aes->key_string(), *enc_algo);
  auto session_ct = minion_pub->Encrypt((*session)->key_string(), *enc_algo);
  auto sig = SigCache().Get(*ctx.signing_key, aes->key_string());
  if (!aes_ct.ok() || !session_ct.ok() || !sig.ok()) {
    ctx.counters->auth_errors++;
    spdlog::error("auth of {}: RSA failure building the reply", *id);
    reply(PackPlain("Server-side exception handling payload"));
    return;
  }
  ret.Set("aes", std::move(*aes_ct));
  ret.Set("session", std::move(*session_ct));
  ret.Set("sig", std::move(*sig));
  if (version > 1 && nonce) ret.Set("nonce", *nonce);
  // Kept for a retry only if this one waited: a prompt answer reaches its minion in time.
  const auto keep_after = ctx.config->auth_reply_cache_wait_ms;
  std::optional<AuthReplies::Basis> basis;
  if (ctx.auth_replies && keep_after.count() >= 0 && waited >= keep_after) {
    basis = AuthReplies::Basis{accepted->stamp, aes->key_string(), (*session)->key_string()};
  }
  // "Accepted" goes out only once the key written for it is durable. The key store groups
  // those syncs, so the RSA work above overlapped the flush and no worker waits for it.
  ctx.key_store->AfterDurable(
      [c = &ctx, reply = std::move(reply), bytes = SignedReply(ctx, ret, version, *sig_algo),
       id = *id, pub = *pub, act = decision->act.empty() ? std::string("accept") : decision->act,
       full = RetMap("full", nonce), version, sig_algo = *sig_algo, digest = std::move(digest),
       basis = std::move(basis)](Status durable) mutable {
        if (!durable.ok()) {
          c->counters->auth_errors++;
          spdlog::error("auth of {}: accepted key not durable: {}", id, durable.error().ToString());
          reply(SignedReply(*c, full, version, sig_algo));
          return;
        }
        c->counters->auth_accepted++;
        if (c->presence) c->presence->Seen(id);
        spdlog::debug("auth of {}: accepted", id);
        FireAuthEvent(*c, id, &pub, true, act);
        if (basis) c->auth_replies->Put(digest, std::move(*basis), bytes);
        reply(bytes);
      });
}

}  // namespace halite::master
