// The minion side of Salt's wire protocol as pure functions: the _auth request and the checks
// of its reply (salt-wire.md 4.5), request envelopes v2/v3 and their encrypted replies (3.2,
// 3.4), the _pillar send_private reply (4.7), publish envelopes (4.8), job return and event
// loads (6.2, 7.5).
//
// No I/O and no shared state: every function is reentrant. RSA private-key work (Verify*,
// OpenPillarReply) costs milliseconds: run it on a worker thread. Functions that take a nonce,
// a timestamp or an IV have ...ForTest forms that pin them for the known-answer vectors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"

namespace halite::minion {

// ---------------------------------------------------------------- _auth (4.5)

struct AuthRequestParams {
  std::string_view id;
  std::string_view public_pem;  // CleanKey(minion.pub)
  wire::OaepHash enc = wire::OaepHash::kSha1;
  wire::SigHash sig = wire::SigHash::kSha1;
  int version = 3;  // the clear envelope's version: 2 or 3
  // The pinned master key; when set, `token` is sent RSA-OAEP encrypted to it.
  const wire::RsaPublicKey* master_key = nullptr;
  std::string_view token;  // 76-char Crypticle key string, made once per minion
};

// {enc:"clear", load:{cmd, id, nonce, enc_algo, sig_algo, [token], pub}, version}.
// Error only when the token cannot be encrypted (a tiny master key).
Result<wire::Value> BuildAuthRequest(const AuthRequestParams& params, std::string_view nonce);

enum class AuthStatus {
  kAccepted,    // creds are valid
  kPending,     // ret: True (or any value Salt treats as "retry"): wait acceptance_wait_time
  kRejected,    // ret: False
  kFull,        // ret: "full" (max_minions)
  kBadEncAlgo,  // unsigned {ret: "bad enc algo"}
  kBadSigAlgo,  // unsigned {ret: "bad sig algo"}
};
std::string_view AuthStatusName(AuthStatus status);

struct AuthCreds {
  std::string aes;      // master AES key string (publishes; v2 requests)
  std::string session;  // per-minion session key string (v3 requests); empty from old masters
  std::uint16_t publish_port = 0;
  std::string master_pub;       // `pub_key` as received
  bool pin_master_key = false;  // no key was pinned yet: write master_pub (TOFU)
};

struct AuthReply {
  AuthStatus status = AuthStatus::kPending;
  AuthCreds creds;  // kAccepted only
};

struct AuthVerifyParams {
  const wire::RsaPrivateKey* minion_key = nullptr;
  // The text of minion_master.pub, or nullptr when nothing is pinned yet.
  const std::string* pinned_master_pub = nullptr;
  bool token_sent = false;  // the request carried `token` (there was a pinned key)
  std::string_view token;   // the plain token that was sent
  std::string_view nonce;   // the request nonce
  wire::OaepHash enc = wire::OaepHash::kSha1;
  wire::SigHash sig = wire::SigHash::kSha1;
  bool require_session = true;  // v3 minions need `session`
};

// Checks a decoded _auth reply as Salt's minion does (4.5.4), stricter in one place: on first
// contact the outer signature is checked with the received `pub_key` before it is trusted.
// Errors (the sign-in failed; retry later): Unauthenticated for a bad or missing signature,
// a nonce mismatch, a changed master key ("The master key has changed"), an `aes` signature
// or `token` mismatch; InvalidArgument for a malformed reply.
Result<AuthReply> VerifyAuthReply(const wire::Value& reply, const AuthVerifyParams& params);

// ---------------------------------------------------------------- requests (3.2, 3.4)

struct RequestKeys {
  int version = 3;                       // 3: session key and outer id; 2: shared AES key
  const wire::Crypticle* key = nullptr;  // session key (v3) or master AES key (v2)
  std::string_view id;                   // minion id
  std::string_view tok;                  // v3: X931Sign(minion key, "salt")
  std::string_view enc_algo = "OAEP-SHA1";
  std::string_view sig_algo = "PKCS1v15-SHA1";
};

struct EncodedRequest {
  std::string body;   // one ZeroMQ frame
  std::string nonce;  // the reply must echo it
};

// v3: load + {nonce, ts, tok, id} encrypted with the session key in
// {enc:"aes", load, version:3, id, enc_algo, sig_algo}; v2: load + {nonce} under the AES key
// in {enc:"aes", load, version:2}. Fields already in `load` keep their position.
EncodedRequest EncodeRequest(wire::Value load, const RequestKeys& keys);
EncodedRequest EncodeRequestForTest(wire::Value load, const RequestKeys& keys,
                                    std::string_view nonce, std::int64_t ts, std::string_view iv);

// Decodes an encrypted reply: a msgpack string holding Crypticle(key).dumps(ret, nonce).
// Unauthenticated when it is anything else ("bad load", {}, a wrong key or nonce): the caller
// re-authenticates and resends once (5.3).
Result<wire::Value> DecodeReply(std::string_view body, const wire::Crypticle& key,
                                std::string_view nonce);

// ---------------------------------------------------------------- loads (6.2)

// {id, grains, saltenv:"base", pillarenv:nil, pillar_override:{}, extra_minion_data:{},
//  ver:"2", cmd:"_pillar"}.
wire::Value BuildPillarLoad(std::string_view id, wire::Value grains);

// Opens a send_private reply (4.7). FailedPrecondition when it has no `key` (the master wants
// a re-auth); Unauthenticated when the key does not decrypt, the signature does not verify
// with the master key, or the signed key/nonce differ. Returns the pillar map.
Result<wire::Value> OpenPillarReply(const wire::Value& reply, const wire::RsaPrivateKey& minion_key,
                                    wire::OaepHash enc, const wire::RsaPublicKey& master_key,
                                    wire::SigHash sig, std::string_view nonce);

// {id, cmd:"_minion_event", pretag:nil, tok, data, tag}.
wire::Value BuildEventLoad(std::string_view id, std::string_view tok, std::string_view tag,
                           wire::Value data);
// "Minion <id> started at <asctime>" with Python's time.asctime() layout.
std::string StartEventText(std::string_view id);

struct JobResult {
  wire::Value ret;
  int retcode = 0;
  bool success = true;
  std::string out;  // outputter, empty: none
};

// {cmd:"_return", id, success, return, retcode, [out], jid, fun, fun_args, [user],
//  [master_id], [metadata]} from the publish load and the function's result (7.5).
wire::Value BuildReturnLoad(std::string_view id, const wire::Value& pub_load,
                            const JobResult& result);

// ---------------------------------------------------------------- publishes (4.8)

// Decrypts one publish frame: the envelope {enc:"aes", load, [sig, sig_algo]}. With
// `require_signature` the sig must verify (over the ciphertext) with `master_key`. The serial
// replay guard is applied: a replayed or stale serial gives an empty map, which callers drop.
// Errors: Unauthenticated when the HMAC fails (re-auth and retry once) or a required
// signature is bad; InvalidArgument for a malformed frame.
Result<wire::Value> OpenPublish(std::string_view frame, const wire::Crypticle& aes,
                                wire::Crypticle::SerialGuard& guard,
                                const wire::RsaPublicKey* master_key, bool require_signature);

// True when `load` has tgt, jid, fun and arg (a job for some minion).
bool IsJobLoad(const wire::Value& load);

// Whether the publish load targets this minion (tgt_type default glob, delimiter default ':').
// `grains` may be null when only id matching is needed; grain targets then do not match.
// Error::InvalidArgument for an unsupported target type or malformed expression.
// `pillar`: the minion's pillar for I@/J@ targets, or nullptr (those never match).
Result<bool> IsTargeted(const wire::Value& load, std::string_view id, const wire::Value* grains,
                        const wire::Value* pillar = nullptr);
// True when the target type needs the grains map.
bool TargetNeedsGrains(const wire::Value& load);

}  // namespace halite::minion
