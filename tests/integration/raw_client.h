// A deliberately small, independent implementation of the minion side of `_auth` and v3
// requests, used to drive halite-master precisely (bad input, key states) over real sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "halite/common/result.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/msgpack.h"
#include "halite/wire/rsa.h"

namespace halite::testing {

// Sends one frame on a fresh REQ socket and returns the reply frame (nullopt on timeout).
std::optional<std::string> RequestOnce(
    zmq::context_t& ctx, const std::string& endpoint, const std::string& body,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

struct AuthResult {
  wire::Value outer;  // the reply map
  wire::Value inner;  // decoded signed load (or the unsigned load)
  bool signature_ok = false;
  std::optional<wire::Crypticle> aes;
  std::optional<wire::Crypticle> session;
};

// What a test changes in an otherwise correct v3 request, to probe one check of the master.
struct RequestTweaks {
  std::optional<std::string> envelope_id;  // the clear "id" beside the ciphertext
  std::optional<std::string> load_id;      // the "id" inside the encrypted load
  std::optional<std::int64_t> ts;          // seconds since the epoch; default now
  bool omit_ts = false;
  std::optional<std::string> tok;  // default: "salt" signed with this minion's key
};

class RawMinion {
 public:
  RawMinion(std::string id, wire::RsaPrivateKey key, std::string endpoint)
      : id_(std::move(id)), key_(std::move(key)), endpoint_(std::move(endpoint)) {}

  // v3 `_auth`; verifies the reply signature with `master_pub` when given.
  Result<AuthResult> Auth(zmq::context_t& ctx, const std::optional<wire::RsaPublicKey>& master_pub,
                          int version = 3);
  // The packed v3 aes request for `load` (cmd etc.) under `nonce`, signed with a tok: what
  // Request sends.
  Result<std::string> Envelope(const wire::Crypticle& session, wire::Value load,
                               const std::string& nonce, const RequestTweaks& tweaks = {}) const;
  // A v3 aes request with `load` (cmd etc.); returns the decrypted reply.
  Result<wire::Value> Request(zmq::context_t& ctx, const wire::Crypticle& session, wire::Value load,
                              const RequestTweaks& tweaks = {});
  // `_pillar` (protocol 2 reply: a one-shot AES key for this minion's RSA key, the signed
  // pillar in it); returns the pillar after checking the nonce.
  Result<wire::Value> Pillar(zmq::context_t& ctx, const wire::Crypticle& session,
                             wire::Value grains, const std::string& saltenv = "base",
                             const wire::Value& extra = wire::Value());  // more load keys
  const wire::RsaPrivateKey& key() const { return key_; }
  // "salt" signed with this minion's key, as the tok of its requests.
  Result<std::string> Token() const { return key_.X931Sign("salt"); }
  // Any aes request, built by hand so that a test can get each part wrong on purpose.
  struct Forge {
    int version = 3;
    std::optional<std::string> envelope_id = std::nullopt;  // v3 envelope "id"; default: own
    std::optional<std::string> load_id = std::nullopt;      // load "id"; default: own id
    bool with_tok = true;
    std::optional<std::string> tok = std::nullopt;  // default: own X9.31 tok
    std::optional<long long> ts = std::nullopt;     // v3; default: now
    std::optional<std::string> nonce = std::nullopt;
  };
  struct Encoded {
    std::string body;
    std::string nonce;
  };
  Encoded Encode(const wire::Crypticle& key, wire::Value load, const Forge& forge) const;
  // Auth split in two, for a test that sends one sign-in more than once (a minion's retry).
  Encoded AuthRequest(int version = 3) const;
  Result<AuthResult> ReadAuthReply(const std::string& reply, const std::string& nonce,
                                   const std::optional<wire::RsaPublicKey>& master_pub) const;
  // Sends an encoded request; "bad load" (or any plain string) is Unauthenticated with that
  // text, a plain map reply (errors) is returned as is, else the decrypted reply.
  Result<wire::Value> Send(zmq::context_t& ctx, const Encoded& encoded,
                           const wire::Crypticle& key) const;
  std::string Tok() const;
  const std::string& endpoint() const { return endpoint_; }
  const std::string& id() const { return id_; }
  std::string PublicPem() const { return wire::CleanKey(key_.PublicKey().ToPem()); }

 private:
  std::string id_;
  wire::RsaPrivateKey key_;
  std::string endpoint_;
};

// The AES key a master gives minion `id` (key `key`) signing in at `endpoint`; nullopt when
// the sign-in fails or is not accepted.
std::optional<std::string> AesKeyOf(zmq::context_t& ctx, const std::string& id,
                                    const wire::RsaPrivateKey& key, const std::string& endpoint);

}  // namespace halite::testing
