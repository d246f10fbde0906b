// salt-wire 3.3: envelope checks, decryption, token validation and dispatch.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "halite/common/logging.h"
#include "halite/keys/key_store.h"
#include "halite/master/context.h"
#include "halite/master/handlers.h"

namespace halite::master {

std::string PackPlain(std::string_view text) { return wire::Pack(wire::Value(text)); }

void Counters::CountRequest(std::string_view cmd) {
  std::size_t index = kCountedCommandCount - 1;
  for (std::size_t i = 0; i + 1 < kCountedCommandCount; ++i) {
    if (cmd.rfind(kCountedCommands[i], 0) == 0) {
      index = i;
      break;
    }
  }
  requests[index].fetch_add(1, std::memory_order_relaxed);
}

void Counters::ObserveStoreLatency(std::chrono::steady_clock::duration d) {
  double seconds = std::chrono::duration<double>(d).count();
  for (std::size_t i = 0; i < kLatencyBucketCount; ++i) {
    if (seconds <= kLatencyBuckets[i]) store_latency_buckets[i]++;
  }
  store_latency_count++;
  store_latency_sum_us +=
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

namespace {

// Unauthenticated envelopes are decoded under this node budget: an aes envelope is a handful
// of nodes, an `_auth` a dozen, a CLI publish a few thousand at most. It bounds what a stranger
// can make the decoder allocate (a node is ~48 bytes) whatever the frame's size.
constexpr std::size_t kEnvelopeMaxNodes = 1 << 16;
// A decrypted load comes from a minion whose key opened it: the job caches read returns back
// under the default budget, so no larger one may be stored.
constexpr std::size_t kLoadMaxNodes = wire::UnpackLimits{}.max_nodes;

// v2 commands that act as no particular minion: the file server answers every minion alike,
// and their loads carry no id. Everything else acts as the minion named in the load.
bool IdFreeCommand(std::string_view cmd) {
  static const char* const kIdFree[] = {
      "_serve_file",          "_file_hash",   "_file_hash_and_stat", "_file_list",
      "_file_list_emptydirs", "_dir_list",    "_symlink_list",       "_file_envs",
      "_file_find",           "_master_opts", "_ext_nodes",
  };
  for (const char* c : kIdFree) {
    if (cmd == c) return true;
  }
  return false;
}

}  // namespace

void HandleRequest(MasterContext& ctx, std::string body, std::function<void(std::string)> reply,
                   std::chrono::steady_clock::time_point received, std::string peer) {
  auto bad = [&](std::string_view why) {
    ctx.counters->bad_requests++;
    spdlog::debug("bad request: {}", why);
    reply(PackPlain("bad load"));
  };
  // Refusals a site operator should see (rate-limited by the caller's retry pace).
  auto refuse = [&](std::atomic<std::uint64_t>& counter, const std::string& why) {
    counter++;
    ctx.counters->bad_requests++;
    spdlog::warn("refused request: {}", why);
    reply(PackPlain("bad load"));
  };
  wire::UnpackLimits envelope_limits;
  envelope_limits.max_nodes = kEnvelopeMaxNodes;
  auto payload = wire::Unpack(body, envelope_limits);
  if (!payload.ok()) return bad(payload.error().message);
  if (!payload->is_map()) return bad("payload is not a map");
  const std::string* enc = payload->FindStr("enc");
  wire::Value* load = payload->Find("load");
  if (!enc || !load) return bad("missing enc or load");
  int version = 0;
  if (const wire::Value* v = payload->Find("version")) {
    if (auto i = v->int64()) version = static_cast<int>(std::clamp<std::int64_t>(*i, -1, 1000));
  }
  if (version < ctx.config->minimum_request_version) {
    return refuse(ctx.counters->refused_version,
                  fmt::format("protocol version {} is below minimum_request_version {}", version,
                              ctx.config->minimum_request_version));
  }

  // A request this master cannot serve because its storage is gone is our fault, not the
  // minion's: no answer at all, so the minion times out and sends again on a new connection,
  // which HAProxy gives to a master that can serve it (an error answer made it give a return
  // up: docs/failure-modes.md).
  auto unanswered = [&] {
    ctx.counters->storage_shed++;
    reply(std::string());  // dropped on purpose (request_server.h)
  };
  auto storage_lost = [&] {
    return ctx.storage_lost && ctx.storage_lost->load(std::memory_order_relaxed);
  };

  if (*enc == "clear") {
    if (!load->is_map()) {
      reply(PackPlain("payload and load must be a dict"));
      return;
    }
    const std::string* cmd = load->FindStr("cmd");
    ctx.counters->CountRequest(cmd ? *cmd : "other");
    if (cmd && *cmd == "_auth") {
      if (storage_lost()) return unanswered();
      if (ctx.leaving && ctx.leaving->load(std::memory_order_relaxed)) {
        ctx.counters->auth_shed++;  // not served here: the minion tries again elsewhere
        reply(std::string());
        return;
      }
      const auto waited = std::chrono::steady_clock::now() - received;
      if (ctx.config->auth_queue_timeout_ms.count() > 0 &&
          waited > ctx.config->auth_queue_timeout_ms) {
        // Its minion has given up on it and sent another: the RSA work would be wasted.
        ctx.counters->auth_shed++;
        spdlog::debug("_auth waited {} ms for a worker; dropped",
                      std::chrono::duration_cast<std::chrono::milliseconds>(waited).count());
        reply(std::string());
        return;
      }
      HandleAuth(ctx, *load, version, waited, std::move(reply));
      return;
    }
    HandleClear(ctx, cmd ? *cmd : std::string(), std::move(*load), std::move(reply));
    return;
  }
  if (*enc != "aes") return bad("unknown enc");
  if (storage_lost()) return unanswered();
  const std::string* ciphertext = load->str();
  if (!ciphertext) return bad("aes load is not a byte string");

  AesRequest req;
  req.version = version;
  wire::UnpackLimits load_limits;
  load_limits.max_nodes = kLoadMaxNodes;
  Result<wire::Value> decrypted = Error::InvalidArgument("not decrypted");
  if (version > 2) {
    const std::string* id = payload->FindStr("id");
    if (!id || !keys::ValidMinionId(*id)) return bad("v3 request without a valid id");
    // Unlike Salt, no session file is made for ids that have no accepted key.
    // A key or session key that cannot be read because the storage is gone (the shared folder
    // of a cluster; the health check notices within a second) is not answered either: "bad
    // load" made the minion re-auth (on another connection, so often elsewhere), resend once
    // to this master and give a return up.
    auto unreadable = [&](std::string_view what, const Error& error) {
      spdlog::error("{} of {}: {}; request not answered", what, *id, error.ToString());
      unanswered();
    };
    auto accepted = ctx.minion_keys->Lookup(*id);
    if (!accepted.ok()) {
      if (ctx.key_store && !ctx.key_store->Available().ok()) {
        return unreadable("accepted key", accepted.error());
      }
      return bad("v3 request from '" + *id + "' which is not accepted");
    }
    req.id = *id;
    auto key = ctx.session_keys->Get(*id, accepted->stamp);
    if (!key.ok()) return unreadable("session key", key.error());
    decrypted = (*key)->Loads(*ciphertext, std::nullopt, load_limits);
    if (!decrypted.ok() && decrypted.error().code != ErrorCode::kResourceExhausted) {
      // Another master may have renewed the shared session file: re-read it once.
      ctx.session_keys->Forget(*id);
      key = ctx.session_keys->Get(*id, accepted->stamp);
      if (!key.ok()) return unreadable("session key", key.error());
      decrypted = (*key)->Loads(*ciphertext, std::nullopt, load_limits);
    }
    req.key = *key;
  } else {
    req.key = ctx.aes->Current();
    decrypted = req.key->Loads(*ciphertext, std::nullopt, load_limits);
  }
  if (!decrypted.ok()) return bad("cannot decrypt: " + decrypted.error().message);
  if (!decrypted->is_map()) {
    reply(PackPlain("payload and load must be a dict"));
    return;
  }
  req.load = std::move(*decrypted);
  std::string load_id;
  if (const wire::Value* v = req.load.Find("id")) {
    const std::string* s = v->str();
    if (!s) {
      reply(PackPlain("bad load: id is not a string"));
      return;
    }
    if (s->find('\0') != std::string::npos) {
      reply(PackPlain("bad load: id contains a null byte"));
      return;
    }
    load_id = *s;
  }
  if (version > 1) {
    if (const std::string* nonce = req.load.FindStr("nonce")) req.nonce = *nonce;
    req.load.Erase("nonce");
  }
  wire::Value tok;
  if (const wire::Value* t = req.load.Find("tok")) tok = *t;
  req.load.Erase("tok");
  const std::string* cmd = req.load.FindStr("cmd");
  const std::string command = cmd ? *cmd : std::string();
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::int64_t stamped = now;
  bool id_proven = false;  // set where a tok verified against the id's accepted key
  if (version > 2) {
    if (load_id != req.id) return bad("envelope id and load id differ");
    const std::string* tok_bytes = tok.str();
    if (!tok_bytes) return bad("v3 request without tok");
    if (auto st = ctx.minion_keys->VerifyToken(req.id, *tok_bytes); !st.ok()) {
      return bad(st.error().message);
    }
    const std::int64_t ttl = ctx.config->request_server_ttl.count();
    if (ttl > 0) {
      auto ts = req.load.Find("ts") ? req.load.Find("ts")->int64() : std::nullopt;
      if (!ts || *ts < now - ttl || *ts > now + ttl) {
        return refuse(ctx.counters->refused_stale,
                      ts ? fmt::format("{} from '{}' is stamped {} s from our clock, beyond "
                                       "request_server_ttl ({} s): check its clock",
                                       command, req.id, *ts - now, ttl)
                         : fmt::format("{} from '{}' has no ts", command, req.id));
      }
      stamped = *ts;
    }
    id_proven = true;
  } else if (IdFreeCommand(command)) {
    req.id.clear();  // the load's id proves nothing and the command needs none
  } else {
    req.id = load_id;
    const std::string* tok_bytes = tok.str();
    if (tok_bytes && !load_id.empty()) {
      if (!keys::ValidMinionId(load_id)) return bad("invalid id");
      if (auto st = ctx.minion_keys->VerifyToken(load_id, *tok_bytes); !st.ok()) {
        return bad(st.error().message);
      }
      id_proven = true;
    } else if (!ctx.config->allow_unsigned_v2_requests) {
      // Every minion holds the v2 AES key: without a tok, the id is only a claim.
      return refuse(
          ctx.counters->refused_unsigned,
          fmt::format("unsigned v2 {} claiming id '{}': upgrade the minion (current "
                      "3006.x and 3007.x releases speak v3) or set allow_unsigned_v2_requests",
                      Printable(command), Printable(load_id)));
    }
  }
  // A verified id's nonces are remembered for the ttl window; a request seen before is refused,
  // except what minions resend unchanged on a timeout: `_pillar` is answered again (only its
  // owner can read the reply) but its grains are not stored twice; `_return` is stored again,
  // which the job cache makes a no-op for a return it holds, so a resend that crossed a slow
  // commit is acknowledged instead of refused (the minion would count the return as failed).
  if (ctx.replay && req.nonce && !req.id.empty() && (version > 2 || !tok.is_nil())) {
    if (!ctx.replay->Admit(req.id, *req.nonce, stamped, now)) {
      if (command != "_pillar" && command != "_return") {
        return refuse(
            ctx.counters->refused_replay,
            fmt::format("replayed {} from '{}' (nonce seen before)", Printable(command), req.id));
      }
      ctx.counters->refused_replay++;
      req.replayed = true;
    }
  }
  if (const std::string* enc_algo = payload->FindStr("enc_algo")) req.enc_algo = *enc_algo;
  if (const std::string* sig_algo = payload->FindStr("sig_algo")) req.sig_algo = *sig_algo;

  CrypticlePtr key = req.key;
  std::optional<std::string> nonce = req.nonce;
  req.reply = [reply = std::move(reply), key, nonce](ReplyKind kind, wire::Value value) {
    if (kind == ReplyKind::kNone) {
      reply(std::string());  // dropped on purpose (request_server.h)
      return;
    }
    if (kind == ReplyKind::kPlain) {
      reply(wire::Pack(value));
      return;
    }
    std::string ct = nonce ? key->Dumps(value, *nonce) : key->Dumps(value);
    reply(wire::Pack(wire::Value(std::move(ct))));
  };
  ctx.counters->CountRequest(command.empty() ? "other" : command);
  // Only an id its token proved counts as seen (presence.h).
  req.id_proven = id_proven && !req.id.empty();
  if (ctx.presence && req.id_proven) ctx.presence->Seen(req.id);
  // One minion holds at most minion_requests_running workers (MinionSlots). Requests whose
  // id no tok proved (v2 file-server requests; unsigned v2 ones where allowed) share by
  // connection instead, under a key no minion id can be (ids have no control bytes): before,
  // they took workers without limit, so one connection's pipelined `_file_list`s of a large
  // tree held them all (finding 27).
  const bool by_connection = !req.id_proven;
  const std::string id = !by_connection ? req.id : peer.empty() ? std::string() : "\x01" + peer;
  if (!ctx.minion_slots || id.empty()) {
    DispatchAes(ctx, command, std::move(req));
    return;
  }
  // A request that waits for its minion's slot runs later on another worker, outside the
  // request server's task boundary, so it carries its own.
  auto answer = req.reply;
  auto work = [&ctx, command, answer, req = std::move(req)]() mutable {
    try {
      DispatchAes(ctx, command, std::move(req));
    } catch (const std::exception& e) {
      ctx.counters->handler_exceptions++;
      spdlog::error("request handler failed: {}", e.what());
      answer(ReplyKind::kPlain, wire::Value("Server-side exception handling payload"));
    } catch (...) {
      ctx.counters->handler_exceptions++;
      spdlog::error("request handler failed with a non-standard exception");
      answer(ReplyKind::kPlain, wire::Value("Server-side exception handling payload"));
    }
  };
  if (!ctx.minion_slots->Run(id, body.size(), std::move(work))) {
    static LogLimiter limiter(std::chrono::seconds(10));
    if (auto suppressed = limiter.Pass()) {
      spdlog::warn(
          "{} from {} dropped: that {} already has {} requests waiting for its share of the "
          "workers (minion_requests_waiting){}",
          Printable(command), by_connection ? "a connection with no proven id" : "'" + id + "'",
          by_connection ? "connection" : "minion", ctx.config->minion_requests_waiting,
          SuppressedSuffix(*suppressed));
    }
    answer(ReplyKind::kNone, wire::Value());
  }
}

}  // namespace halite::master
