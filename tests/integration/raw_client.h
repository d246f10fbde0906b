// A deliberately small, independent implementation of the minion side of `_auth` and v3
// requests, used to drive halite-master precisely (bad input, key states) over real sockets.
#pragma once

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

class RawMinion {
 public:
  RawMinion(std::string id, wire::RsaPrivateKey key, std::string endpoint)
      : id_(std::move(id)), key_(std::move(key)), endpoint_(std::move(endpoint)) {}

  // v3 `_auth`; verifies the reply signature with `master_pub` when given.
  Result<AuthResult> Auth(zmq::context_t& ctx, const std::optional<wire::RsaPublicKey>& master_pub,
                          int version = 3);
  // A v3 aes request with `load` (cmd etc.); returns the decrypted reply.
  Result<wire::Value> Request(zmq::context_t& ctx, const wire::Crypticle& session,
                              wire::Value load);
  const std::string& id() const { return id_; }
  std::string PublicPem() const { return wire::CleanKey(key_.PublicKey().ToPem()); }

 private:
  std::string id_;
  wire::RsaPrivateKey key_;
  std::string endpoint_;
};

}  // namespace halite::testing
