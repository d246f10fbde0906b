// Request handlers, one file per family (salt-wire 4.5, 6, 7). All run on worker threads.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "halite/master/context.h"
#include "halite/wire/msgpack.h"

namespace halite::master {

enum class ReplyKind {
  kEncrypted,  // Crypticle(session or aes).dumps(value, nonce) as a msgpack str (send)
  kPlain,      // msgpack(value) as is (send_private results, errors)
  // No answer at all (the value is ignored): the sender times out and sends again, on a new
  // connection that HAProxy may give to another master. For a return this master could not
  // make durable: an error answer makes a minion re-auth and resend at once to the same
  // master, then give the return up.
  kNone,
};

// A decrypted aes request.
struct AesRequest {
  int version = 0;
  std::string id;  // the minion id (checked against the token for v3)
  // `id` was proven by a tok (v3, or a signed v2 request); false for an unsigned v2 request
  // let through by allow_unsigned_v2_requests, whose id is only a claim.
  bool id_proven = false;
  std::optional<std::string> nonce;
  std::string enc_algo = "OAEP-SHA1";
  std::string sig_algo = "PKCS1v15-SHA1";
  CrypticlePtr key;  // the key the request came under; replies use it
  wire::Value load;  // without nonce and tok
  // Its nonce was seen before (a `_pillar` resent unchanged): answer it, change nothing.
  bool replayed = false;
  std::function<void(ReplyKind, wire::Value)> reply;  // exactly once
};

std::string PackPlain(std::string_view text);

// auth.cc: `_auth` (clear). `waited`: how long it queued for a worker (an answer to one that
// waited may reach its minion too late, so it is kept for the retry: AuthReplies).
void HandleAuth(MasterContext& ctx, const wire::Value& load, int version,
                std::chrono::steady_clock::duration waited, std::function<void(std::string)> reply);
// clear_funcs.cc: publish, ping and halite's local tool commands.
void HandleClear(MasterContext& ctx, const std::string& cmd, wire::Value load,
                 std::function<void(std::string)> reply);
// aes_funcs.cc: _return, _pillar, _minion_event, file server, peer.h's commands,
// unknown -> {}.
void DispatchAes(MasterContext& ctx, const std::string& cmd, AesRequest req);

}  // namespace halite::master
