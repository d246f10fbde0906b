#include "raw_client.h"

#include "halite/wire/encoding.h"

namespace halite::testing {

std::optional<std::string> RequestOnce(zmq::context_t& ctx, const std::string& endpoint,
                                       const std::string& body, std::chrono::milliseconds timeout) {
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.connect(endpoint);
  req.send(zmq::buffer(body));
  zmq::pollitem_t item{static_cast<void*>(req), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, timeout);
  if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
  zmq::message_t reply;
  (void)req.recv(reply);
  return reply.to_string();
}

Result<AuthResult> RawMinion::Auth(zmq::context_t& ctx,
                                   const std::optional<wire::RsaPublicKey>& master_pub,
                                   int version) {
  Encoded request = AuthRequest(version);
  auto reply = RequestOnce(ctx, endpoint_, request.body);
  if (!reply) return Error::DeadlineExceeded("no auth reply");
  return ReadAuthReply(*reply, request.nonce, master_pub);
}

RawMinion::Encoded RawMinion::AuthRequest(int version) const {
  const std::string nonce = wire::RandomNonce();
  wire::Value load = wire::Value::MapOf({{"cmd", "_auth"},
                                         {"id", id_},
                                         {"nonce", nonce},
                                         {"enc_algo", "OAEP-SHA1"},
                                         {"sig_algo", "PKCS1v15-SHA1"},
                                         {"pub", PublicPem()}});
  wire::Value envelope =
      wire::Value::MapOf({{"enc", "clear"}, {"load", load}, {"version", version}});
  return Encoded{wire::Pack(envelope), nonce};
}

Result<AuthResult> RawMinion::ReadAuthReply(
    const std::string& reply, const std::string& nonce,
    const std::optional<wire::RsaPublicKey>& master_pub) const {
  HALITE_ASSIGN_OR_RETURN(wire::Value outer, wire::Unpack(reply));
  AuthResult result;
  result.outer = outer;
  const wire::Value* inner_v = outer.Find("load");
  if (!inner_v) return Error::InvalidArgument("auth reply without load");
  if (const std::string* inner_bytes = inner_v->str()) {
    HALITE_ASSIGN_OR_RETURN(result.inner, wire::Unpack(*inner_bytes));
    if (master_pub) {
      const std::string* sig = outer.FindStr("sig");
      result.signature_ok =
          sig && master_pub->Verify(*inner_bytes, *sig, wire::SigHash::kSha1).ok();
    }
  } else {
    result.inner = *inner_v;
  }
  if (const std::string* echoed = result.inner.FindStr("nonce"); echoed && *echoed != nonce) {
    return Error::Unauthenticated("nonce mismatch");
  }
  if (const std::string* aes_ct = result.inner.FindStr("aes")) {
    HALITE_ASSIGN_OR_RETURN(std::string aes, key_.Decrypt(*aes_ct, wire::OaepHash::kSha1));
    HALITE_ASSIGN_OR_RETURN(result.aes, wire::Crypticle::FromKeyString(aes));
    const std::string* session_ct = result.inner.FindStr("session");
    if (!session_ct) return Error::InvalidArgument("accepted reply without session");
    HALITE_ASSIGN_OR_RETURN(std::string session, key_.Decrypt(*session_ct, wire::OaepHash::kSha1));
    HALITE_ASSIGN_OR_RETURN(result.session, wire::Crypticle::FromKeyString(session));
    if (master_pub) {
      const std::string* sig = result.inner.FindStr("sig");
      if (!sig) return Error::InvalidArgument("no aes sig");
      HALITE_ASSIGN_OR_RETURN(std::string recovered, master_pub->X931Recover(*sig));
      if (recovered != wire::Sha256Hex(aes)) return Error::Unauthenticated("aes sig mismatch");
    }
  }
  return result;
}

Result<std::string> RawMinion::Envelope(const wire::Crypticle& session, wire::Value load,
                                        const std::string& nonce,
                                        const RequestTweaks& tweaks) const {
  std::string tok;
  if (tweaks.tok) {
    tok = *tweaks.tok;
  } else {
    HALITE_ASSIGN_OR_RETURN(tok, Token());
  }
  load.Set("nonce", nonce);
  if (!tweaks.omit_ts) {
    load.Set("ts", static_cast<long long>(tweaks.ts.value_or(std::time(nullptr))));  // NOLINT
  }
  load.Set("tok", tok);
  load.Set("id", tweaks.load_id.value_or(id_));
  wire::Value envelope = wire::Value::MapOf({{"enc", "aes"},
                                             {"load", session.Dumps(load)},
                                             {"version", 3},
                                             {"id", tweaks.envelope_id.value_or(id_)},
                                             {"enc_algo", "OAEP-SHA1"},
                                             {"sig_algo", "PKCS1v15-SHA1"}});
  return wire::Pack(envelope);
}

Result<wire::Value> RawMinion::Request(zmq::context_t& ctx, const wire::Crypticle& session,
                                       wire::Value load, const RequestTweaks& tweaks) {
  const std::string nonce = wire::RandomNonce();
  HALITE_ASSIGN_OR_RETURN(std::string body, Envelope(session, std::move(load), nonce, tweaks));
  auto reply = RequestOnce(ctx, endpoint_, body);
  if (!reply) return Error::DeadlineExceeded("no reply");
  HALITE_ASSIGN_OR_RETURN(wire::Value frame, wire::Unpack(*reply));
  const std::string* ct = frame.str();
  if (!ct) return Error::InvalidArgument("reply is not a byte string");
  if (*ct == "bad load") return Error::Unauthenticated("bad load");
  return session.Loads(*ct, nonce);
}

Result<wire::Value> RawMinion::Pillar(zmq::context_t& ctx, const wire::Crypticle& session,
                                      wire::Value grains, const std::string& saltenv,
                                      const wire::Value& extra) {
  const std::string nonce = wire::RandomNonce();
  HALITE_ASSIGN_OR_RETURN(std::string tok, Token());
  wire::Value load =
      wire::Value::MapOf({{"cmd", "_pillar"},
                          {"id", id_},
                          {"grains", std::move(grains)},
                          {"saltenv", saltenv},
                          {"pillarenv", wire::Value()},
                          {"ver", "2"},
                          {"nonce", nonce},
                          {"ts", static_cast<long long>(std::time(nullptr))},  // NOLINT
                          {"tok", tok}});
  if (extra.is_map()) {
    for (const auto& [k, v] : *extra.map()) {
      if (const std::string* key = k.str()) load.Set(*key, v);
    }
  }
  wire::Value envelope = wire::Value::MapOf({{"enc", "aes"},
                                             {"load", session.Dumps(load)},
                                             {"version", 3},
                                             {"id", id_},
                                             {"enc_algo", "OAEP-SHA1"},
                                             {"sig_algo", "PKCS1v15-SHA1"}});
  // A stock minion waits up to 60 s for its pillar; hostile-template tests render several
  // files that each run into render_timeout_ms, which a loaded machine stretches past 10 s.
  auto reply = RequestOnce(ctx, endpoint_, wire::Pack(envelope), std::chrono::seconds(60));
  if (!reply) return Error::DeadlineExceeded("no reply");
  HALITE_ASSIGN_OR_RETURN(wire::Value frame, wire::Unpack(*reply));
  if (const std::string* text = frame.str()) return Error::Unauthenticated(*text);
  const std::string* key_ct = frame.FindStr("key");
  const std::string* pillar_ct = frame.FindStr("pillar");
  if (!key_ct || !pillar_ct) return Error::InvalidArgument("pillar reply: " + frame.ToJson());
  HALITE_ASSIGN_OR_RETURN(std::string one_shot, key_.Decrypt(*key_ct, wire::OaepHash::kSha1));
  HALITE_ASSIGN_OR_RETURN(wire::Crypticle crypticle, wire::Crypticle::FromKeyString(one_shot));
  HALITE_ASSIGN_OR_RETURN(wire::Value signed_data, crypticle.Loads(*pillar_ct));
  const std::string* data = signed_data.FindStr("data");
  if (!data) return Error::InvalidArgument("pillar reply without data");
  HALITE_ASSIGN_OR_RETURN(wire::Value inner, wire::Unpack(*data));
  const std::string* echoed = inner.FindStr("nonce");
  if (!echoed || *echoed != nonce) return Error::Unauthenticated("pillar nonce mismatch");
  const wire::Value* pillar = inner.Find("pillar");
  if (!pillar) return Error::InvalidArgument("pillar reply without pillar");
  return *pillar;
}

std::string RawMinion::Tok() const {
  auto tok = key_.X931Sign("salt");
  return tok.ok() ? *tok : std::string();
}

RawMinion::Encoded RawMinion::Encode(const wire::Crypticle& key, wire::Value load,
                                     const Forge& forge) const {
  Encoded out;
  out.nonce = forge.nonce ? *forge.nonce : wire::RandomNonce();
  load.Set("nonce", out.nonce);
  if (forge.with_tok) load.Set("tok", forge.tok ? *forge.tok : Tok());
  load.Set("id", forge.load_id ? *forge.load_id : id_);
  if (forge.version > 2)
    load.Set("ts", forge.ts ? *forge.ts : static_cast<long long>(std::time(nullptr)));
  wire::Value envelope =
      wire::Value::MapOf({{"enc", "aes"}, {"load", key.Dumps(load)}, {"version", forge.version}});
  if (forge.version > 2) {
    envelope.Set("id", forge.envelope_id ? *forge.envelope_id : id_);
    envelope.Set("enc_algo", "OAEP-SHA1");
    envelope.Set("sig_algo", "PKCS1v15-SHA1");
  }
  out.body = wire::Pack(envelope);
  return out;
}

Result<wire::Value> RawMinion::Send(zmq::context_t& ctx, const Encoded& encoded,
                                    const wire::Crypticle& key) const {
  auto reply = RequestOnce(ctx, endpoint_, encoded.body);
  if (!reply) return Error::DeadlineExceeded("no reply");
  HALITE_ASSIGN_OR_RETURN(wire::Value frame, wire::Unpack(*reply));
  if (frame.is_map()) return frame;
  const std::string* ct = frame.str();
  if (!ct) return Error::InvalidArgument("reply is neither a map nor a byte string");
  auto decrypted = key.Loads(*ct, encoded.nonce);
  if (!decrypted.ok()) return Error::Unauthenticated(*ct);
  return decrypted;
}

std::optional<std::string> AesKeyOf(zmq::context_t& ctx, const std::string& id,
                                    const wire::RsaPrivateKey& key, const std::string& endpoint) {
  RawMinion raw(id, key, endpoint);
  auto auth = raw.Auth(ctx, std::nullopt);
  if (!auth.ok() || !auth->aes) return std::nullopt;
  return auth->aes->key_string();
}

}  // namespace halite::testing
