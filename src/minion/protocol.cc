#include "halite/minion/protocol.h"

#include <ctime>

#include "halite/minion/keys.h"
#include "halite/wire/encoding.h"
#include "halite/wire/target.h"

namespace halite::minion {

using wire::Value;

// ---------------------------------------------------------------- _auth

Result<Value> BuildAuthRequest(const AuthRequestParams& p, std::string_view nonce) {
  Value load = Value::MapOf({{"cmd", "_auth"},
                             {"id", p.id},
                             {"nonce", nonce},
                             {"enc_algo", wire::EncAlgoName(p.enc)},
                             {"sig_algo", wire::SigAlgoName(p.sig)}});
  if (p.master_key != nullptr) {
    HALITE_ASSIGN_OR_RETURN(std::string token, p.master_key->Encrypt(p.token, p.enc));
    load.Set("token", Value::Bin(std::move(token)));
  }
  load.Set("pub", p.public_pem);
  return Value::MapOf({{"enc", "clear"}, {"load", std::move(load)}, {"version", p.version}});
}

std::string_view AuthStatusName(AuthStatus status) {
  switch (status) {
    case AuthStatus::kAccepted:
      return "accepted";
    case AuthStatus::kPending:
      return "pending";
    case AuthStatus::kRejected:
      return "rejected";
    case AuthStatus::kFull:
      return "full";
    case AuthStatus::kBadEncAlgo:
      return "bad enc algo";
    case AuthStatus::kBadSigAlgo:
      return "bad sig algo";
  }
  return "?";
}

namespace {

Result<std::string> DecryptKeyString(const wire::RsaPrivateKey& key, const Value& inner,
                                     std::string_view field, wire::OaepHash enc) {
  const std::string* ct = inner.FindStr(field);
  if (ct == nullptr) {
    return Error::InvalidArgument("sign-in reply has no '" + std::string(field) + "'");
  }
  auto plain = key.Decrypt(*ct, enc);
  if (!plain.ok()) {
    return Error::Unauthenticated("sign-in reply '" + std::string(field) +
                                  "' does not decrypt: " + plain.error().message);
  }
  return std::move(plain).value();
}

Status CheckKeyString(const std::string& key_string, std::string_view field) {
  auto c = wire::Crypticle::FromKeyString(key_string);
  if (!c.ok()) {
    return Error::InvalidArgument("sign-in reply '" + std::string(field) +
                                  "' is not a key: " + c.error().message);
  }
  return OkStatus();
}

}  // namespace

Result<AuthReply> VerifyAuthReply(const Value& reply, const AuthVerifyParams& p) {
  HALITE_CHECK(p.minion_key != nullptr);
  if (!reply.is_map()) return Error::InvalidArgument("sign-in reply is not a map");
  const Value* load = reply.Find("load");
  if (load == nullptr) return Error::InvalidArgument("sign-in reply has no 'load'");
  if (load->is_map()) {
    const std::string* ret = load->FindStr("ret");
    if (ret != nullptr && *ret == "bad enc algo") return AuthReply{AuthStatus::kBadEncAlgo, {}};
    if (ret != nullptr && *ret == "bad sig algo") return AuthReply{AuthStatus::kBadSigAlgo, {}};
    return Error::Unauthenticated("sign-in reply is not signed");
  }
  const std::string* signed_load = load->str();
  if (signed_load == nullptr) return Error::InvalidArgument("sign-in reply 'load' is not bytes");
  const std::string* signature = reply.FindStr("sig");
  if (signature == nullptr) return Error::Unauthenticated("sign-in reply has no 'sig'");
  HALITE_ASSIGN_OR_RETURN(Value inner, wire::Unpack(*signed_load));
  if (!inner.is_map()) return Error::InvalidArgument("signed sign-in load is not a map");

  const std::string* pub_key = inner.FindStr("pub_key");
  if (pub_key != nullptr && p.pinned_master_pub != nullptr && p.token_sent &&
      !SameKeyText(*pub_key, *p.pinned_master_pub)) {
    return Error::Unauthenticated(
        "The master key has changed, the salt master could have been subverted, verify salt "
        "master's public key");
  }
  // The key that must have signed the reply: the pinned one, else (first contact) the one it
  // brings along. A first-contact pending/rejected reply carries no key and cannot be checked,
  // as in Salt.
  const std::string* key_text = p.pinned_master_pub != nullptr ? p.pinned_master_pub : pub_key;
  std::optional<wire::RsaPublicKey> master_key;
  if (key_text != nullptr) {
    auto parsed = wire::RsaPublicKey::FromPem(*key_text);
    if (!parsed.ok()) {
      return Error::Unauthenticated("master public key unusable: " + parsed.error().message);
    }
    master_key.emplace(std::move(parsed).value());
    if (!master_key->Verify(*signed_load, *signature, p.sig).ok()) {
      return Error::Unauthenticated("Invalid signature on the sign-in reply");
    }
  }
  const std::string* nonce = inner.FindStr("nonce");
  if (nonce == nullptr || *nonce != p.nonce) {
    return Error::Unauthenticated("Invalid nonce in the sign-in reply");
  }

  if (const Value* ret = inner.Find("ret")) {
    if (!ret->Truthy()) return AuthReply{AuthStatus::kRejected, {}};
    const std::string* text = ret->str();
    if (text != nullptr && *text == "full") return AuthReply{AuthStatus::kFull, {}};
    return AuthReply{AuthStatus::kPending, {}};
  }
  if (pub_key == nullptr || !master_key) {
    return Error::InvalidArgument("sign-in reply has neither 'ret' nor 'pub_key'");
  }

  AuthReply out{AuthStatus::kAccepted, {}};
  HALITE_ASSIGN_OR_RETURN(out.creds.aes, DecryptKeyString(*p.minion_key, inner, "aes", p.enc));
  HALITE_RETURN_IF_ERROR(CheckKeyString(out.creds.aes, "aes"));
  const std::string* aes_sig = inner.FindStr("sig");
  if (aes_sig == nullptr) return Error::Unauthenticated("sign-in reply has no aes 'sig'");
  auto digest = master_key->X931Recover(*aes_sig);
  if (!digest.ok() || *digest != wire::Sha256Hex(out.creds.aes)) {
    return Error::Unauthenticated("the aes key in the sign-in reply is not signed by the master");
  }
  if (p.token_sent) {
    auto token = DecryptKeyString(*p.minion_key, inner, "token", p.enc);
    if (!token.ok() || *token != p.token) {
      return Error::Unauthenticated("The master failed to decrypt the random minion token");
    }
  }
  if (inner.Find("session") != nullptr) {
    HALITE_ASSIGN_OR_RETURN(out.creds.session,
                            DecryptKeyString(*p.minion_key, inner, "session", p.enc));
    HALITE_RETURN_IF_ERROR(CheckKeyString(out.creds.session, "session"));
  } else if (p.require_session) {
    return Error::InvalidArgument("sign-in reply has no 'session' (master older than 3006.12?)");
  }
  const Value* port = inner.Find("publish_port");
  auto port_number = port != nullptr ? port->int64() : std::nullopt;
  if (!port_number || *port_number <= 0 || *port_number > 65535) {
    return Error::InvalidArgument("sign-in reply has no valid 'publish_port'");
  }
  out.creds.publish_port = static_cast<std::uint16_t>(*port_number);
  out.creds.master_pub = *pub_key;
  out.creds.pin_master_key = p.pinned_master_pub == nullptr;
  return out;
}

// ---------------------------------------------------------------- requests

namespace {

EncodedRequest Encode(Value load, const RequestKeys& keys, std::string nonce, std::int64_t ts,
                      std::optional<std::string_view> iv) {
  HALITE_CHECK(keys.key != nullptr);
  load.Set("nonce", nonce);
  if (keys.version >= 3) {
    load.Set("ts", ts);
    load.Set("tok", Value::Bin(std::string(keys.tok)));
    load.Set("id", keys.id);
  } else if (!keys.tok.empty()) {
    // Unlike stock v2 minions, which sign only events and mine requests, halite's minion signs
    // every v2 request: the master cannot tell one minion from another without it (issue 12).
    load.Set("tok", Value::Bin(std::string(keys.tok)));
  }
  std::string ct =
      iv ? keys.key->DumpsWithIvForTest(load, std::nullopt, *iv) : keys.key->Dumps(load);
  Value envelope = Value::MapOf({{"enc", "aes"}, {"load", Value::Bin(std::move(ct))}});
  envelope.Set("version", keys.version >= 3 ? 3 : 2);
  if (keys.version >= 3) {
    envelope.Set("id", keys.id);
    envelope.Set("enc_algo", keys.enc_algo);
    envelope.Set("sig_algo", keys.sig_algo);
  }
  return {wire::Pack(envelope), std::move(nonce)};
}

}  // namespace

EncodedRequest EncodeRequest(Value load, const RequestKeys& keys) {
  return Encode(std::move(load), keys, wire::RandomNonce(),
                static_cast<std::int64_t>(std::time(nullptr)), std::nullopt);
}

EncodedRequest EncodeRequestForTest(Value load, const RequestKeys& keys, std::string_view nonce,
                                    std::int64_t ts, std::string_view iv) {
  return Encode(std::move(load), keys, std::string(nonce), ts, iv);
}

Result<Value> DecodeReply(std::string_view body, const wire::Crypticle& key,
                          std::string_view nonce) {
  auto frame = wire::Unpack(body);
  if (!frame.ok()) return Error::Unauthenticated("reply is not msgpack: " + frame.error().message);
  const std::string* ct = frame->str();
  if (ct == nullptr) return Error::Unauthenticated("reply is not encrypted: " + frame->ToJson());
  auto value = key.Loads(*ct, nonce);
  if (!value.ok()) {
    std::string shown = ct->size() <= 64 ? " (" + frame->ToJson() + ")" : "";
    return Error::Unauthenticated("reply does not decrypt: " + value.error().message + shown);
  }
  return std::move(value).value();
}

// ---------------------------------------------------------------- loads

Value BuildPillarLoad(std::string_view id, Value grains) {
  return Value::MapOf({{"id", id},
                       {"grains", std::move(grains)},
                       {"saltenv", nullptr},
                       {"pillarenv", nullptr},
                       {"pillar_override", Value::EmptyMap()},
                       {"extra_minion_data", Value::EmptyMap()},
                       {"ver", "2"},
                       {"cmd", "_pillar"}});
}

Result<Value> OpenPillarReply(const Value& reply, const wire::RsaPrivateKey& minion_key,
                              wire::OaepHash enc, const wire::RsaPublicKey& master_key,
                              wire::SigHash sig, std::string_view nonce) {
  const std::string* key = reply.FindStr("key");
  if (key == nullptr) {
    const std::string* error = reply.FindStr("error");
    return Error::FailedPrecondition("pillar reply has no key" +
                                     (error ? ": " + *error : std::string()));
  }
  const std::string* pillar_ct = reply.FindStr("pillar");
  if (pillar_ct == nullptr) return Error::InvalidArgument("pillar reply has no 'pillar'");
  auto key_string = minion_key.Decrypt(*key, enc);
  if (!key_string.ok()) {
    return Error::Unauthenticated("pillar key does not decrypt: " + key_string.error().message);
  }
  auto crypticle = wire::Crypticle::FromKeyString(*key_string);
  if (!crypticle.ok()) return Error::Unauthenticated("pillar key is not a key");
  auto signed_msg = crypticle->Loads(*pillar_ct);
  if (!signed_msg.ok()) {
    return Error::Unauthenticated("pillar does not decrypt: " + signed_msg.error().message);
  }
  const std::string* data = signed_msg->FindStr("data");
  const std::string* signature = signed_msg->FindStr("sig");
  if (data == nullptr || signature == nullptr) {
    return Error::Unauthenticated("pillar is not signed");
  }
  if (!master_key.Verify(*data, *signature, sig).ok()) {
    return Error::Unauthenticated("pillar signature does not verify with the master key");
  }
  HALITE_ASSIGN_OR_RETURN(Value inner, wire::Unpack(*data));
  const std::string* inner_key = inner.FindStr("key");
  if (inner_key == nullptr || *inner_key != *key) {
    return Error::Unauthenticated("pillar was signed for another key");
  }
  const std::string* inner_nonce = inner.FindStr("nonce");
  if (inner_nonce == nullptr || *inner_nonce != nonce) {
    return Error::Unauthenticated("pillar nonce does not match the request");
  }
  Value* pillar = inner.Find("pillar");
  if (pillar == nullptr || !pillar->is_map()) {
    return Error::InvalidArgument("pillar data is not a map");
  }
  return std::move(*pillar);
}

Value BuildEventLoad(std::string_view id, std::string_view tok, std::string_view tag, Value data) {
  return Value::MapOf({{"id", id},
                       {"cmd", "_minion_event"},
                       {"pretag", nullptr},
                       {"tok", Value::Bin(std::string(tok))},
                       {"data", std::move(data)},
                       {"tag", tag}});
}

std::string StartEventText(std::string_view id) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &local);
  return "Minion " + std::string(id) + " started at " + std::string(buf, n);
}

Value BuildReturnLoad(std::string_view id, const Value& pub_load, const JobResult& result) {
  Value load = Value::MapOf({{"cmd", "_return"},
                             {"id", id},
                             {"success", result.success},
                             {"return", result.ret},
                             {"retcode", result.retcode}});
  if (!result.out.empty()) load.Set("out", result.out);
  for (std::string_view key : {"jid", "fun"}) {
    const Value* v = pub_load.Find(key);
    load.Set(key, v != nullptr ? *v : Value(""));
  }
  const Value* arg = pub_load.Find("arg");
  load.Set("fun_args", arg != nullptr ? *arg : Value::EmptyArray());
  for (std::string_view key : {"user", "master_id"}) {
    if (const Value* v = pub_load.Find(key)) load.Set(key, *v);
  }
  if (const Value* metadata = pub_load.Find("metadata"); metadata && metadata->is_map()) {
    load.Set("metadata", *metadata);
  }
  return load;
}

// ---------------------------------------------------------------- publishes

Result<Value> OpenPublish(std::string_view frame, const wire::Crypticle& aes,
                          wire::Crypticle::SerialGuard& guard, const wire::RsaPublicKey* master_key,
                          bool require_signature) {
  auto envelope = wire::Unpack(frame);
  if (!envelope.ok()) {
    return Error::InvalidArgument("publish is not msgpack: " + envelope.error().message);
  }
  const std::string* enc = envelope->FindStr("enc");
  const std::string* load = envelope->FindStr("load");
  if (enc == nullptr || *enc != "aes" || load == nullptr) {
    return Error::InvalidArgument("publish is not an aes envelope");
  }
  if (require_signature) {
    const std::string* signature = envelope->FindStr("sig");
    if (signature == nullptr || master_key == nullptr) {
      return Error::Unauthenticated("publish is not signed");
    }
    const std::string* algo = envelope->FindStr("sig_algo");
    auto hash = wire::ParseSigAlgo(algo != nullptr ? *algo : "PKCS1v15-SHA1");
    if (!hash.ok()) return Error::Unauthenticated("publish sig_algo unsupported");
    if (!master_key->Verify(*load, *signature, *hash).ok()) {
      return Error::Unauthenticated("publish signature does not verify");
    }
  }
  HALITE_ASSIGN_OR_RETURN(Value decoded, aes.Loads(*load));
  return guard.Apply(std::move(decoded));
}

bool IsJobLoad(const Value& load) {
  return load.is_map() && load.Find("tgt") != nullptr && load.Find("jid") != nullptr &&
         load.Find("fun") != nullptr && load.Find("arg") != nullptr;
}

Result<bool> IsTargeted(const Value& load, std::string_view id, const Value* grains,
                        const Value* pillar) {
  const Value* tgt = load.Find("tgt");
  if (tgt == nullptr) return Error::InvalidArgument("publish has no tgt");
  const std::string* type = load.FindStr("tgt_type");
  const std::string* delimiter = load.FindStr("delimiter");
  wire::TargetContext ctx;
  ctx.id = id;
  ctx.grains = grains;
  ctx.pillar = pillar;
  ctx.greedy = false;
  ctx.delimiter = (delimiter != nullptr && !delimiter->empty()) ? std::string_view(*delimiter)
                                                                : std::string_view(":");
  return wire::MatchTarget(*tgt, type != nullptr ? std::string_view(*type) : "glob", ctx);
}

bool TargetNeedsGrains(const Value& load) {
  const std::string* type = load.FindStr("tgt_type");
  return type != nullptr &&
         (*type == "grain" || *type == "grain_pcre" || *type == "ipcidr" || *type == "compound");
}

}  // namespace halite::minion
