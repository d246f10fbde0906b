// salt-wire 6.3 and 7.2: clear commands. `publish` from the salt/halite CLIs, `ping`, and the
// `_halite_*` commands that halite's local tools use (lookup_jid, list_jobs, probe, fire_event).
// Every command but ping requires the root key from <cachedir>/.root_key (file permissions are
// the access control, as with Salt's local client), except a publish carrying an eauth `token`
// (halite-api), which is checked against external_auth instead, and the requests of a
// publisher_acl user's CLI (its key from <cachedir>/.<user>_key): a publish checked against
// publisher_acl, the probe, and lookup_jid of that user's own jobs. Every publish is checked
// against publisher_acl_blacklist first, as Salt's ClearFuncs.publish does.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "halite/auth/publisher_acl.h"
#include "halite/jobs/jid.h"
#include "halite/master/handlers.h"
#include "halite/master/peer.h"
#include "halite/master/publish_job.h"
#include "halite/master/targeting.h"
#include "halite/wire/encoding.h"
#include "halite/wire/event.h"
#include "halite/wire/keyed_map.h"
#include "halite/wire/target.h"

namespace halite::master {

namespace {

// The largest arguments (packed) one job shows in a jobs listing; larger ones are listed as
// "VALUE_TRIMMED".
constexpr std::size_t kMaxListedArgumentBytes = 64 << 10;
// The largest load a clear `ping` gets back (packed); larger ones are answered "bad load".
constexpr std::size_t kMaxPingEchoBytes = 4096;

std::string AuthError() {
  return wire::Pack(wire::Value::MapOf(
      {{"error", wire::Value::MapOf({{"name", "AuthenticationError"},
                                     {"message", "Authentication error occurred."}})}}));
}

std::string ClearReply(wire::Value load) {
  return wire::Pack(wire::Value::MapOf({{"enc", "clear"}, {"load", std::move(load)}}));
}

std::string ClearError(std::string message) {
  return ClearReply(wire::Value::MapOf({{"error", std::move(message)}}));
}

bool KeyMatches(const MasterContext& ctx, const wire::Value& load) {
  const std::string* key = load.FindStr("key");
  return key && !ctx.root_key.empty() && wire::ConstantTimeEquals(*key, ctx.root_key);
}

// The publisher_acl user whose key the load carries, or empty.
std::string KeyUser(const MasterContext& ctx, const wire::Value& load) {
  const std::string* key = load.FindStr("key");
  if (!key) return "";
  for (const auto& [user, user_key] : ctx.user_keys) {
    if (wire::ConstantTimeEquals(*key, user_key)) return user;
  }
  return "";
}

wire::Value StrList(const std::vector<std::string>& v) {
  wire::Array a;
  a.reserve(v.size());
  for (const auto& s : v) a.emplace_back(s);
  return wire::Value(std::move(a));
}

std::string NamedError(const char* name, const char* message) {
  return wire::Pack(
      wire::Value::MapOf({{"error", wire::Value::MapOf({{"name", name}, {"message", message}})}}));
}

// Salt's auth_check of a publish (tgt and fun present): target-scoped entries resolved as
// this publish resolves its target.
bool Allows(MasterContext& ctx, const wire::Array& auth_list, const wire::Value& load) {
  std::string tgt_type = load.FindStr("tgt_type") ? *load.FindStr("tgt_type") : "glob";
  const wire::Value empty = wire::Value::EmptyArray();
  const wire::Value* arg = load.Find("arg") ? load.Find("arg") : &empty;
  auto resolve = [&ctx](const wire::Value& t,
                        std::string_view type) -> Result<std::set<std::string>> {
    HALITE_ASSIGN_OR_RETURN(Resolved r, ResolveTargets(ctx, t, std::string(type), ":"));
    return std::set<std::string>(r.minions.begin(), r.minions.end());
  };
  return auth::AuthCheck(auth_list, *load.Find("fun"), *arg, *load.Find("tgt"), tgt_type, resolve);
}

// Salt's clear publish with an eauth `token` (halite-api's path): the token must be valid and
// the external_auth ACL of its user must allow the functions on the target (target-scoped
// entries resolved as this publish resolves its target). The load's user becomes the token's.
// Returns the error reply, or empty when allowed.
std::string CheckTokenPublish(MasterContext& ctx, wire::Value& load) {
  const std::string* token = load.FindStr("token");
  if (!ctx.authenticator || !token) {
    return NamedError("TokenAuthenticationError",
                      "Authentication failure of type \"token\" occurred.");
  }
  auto checked = ctx.authenticator->CheckToken(*token);
  if (!checked.ok()) {
    spdlog::warn("publish refused: {}", checked.error().message);
    return NamedError("TokenAuthenticationError",
                      "Authentication failure of type \"token\" occurred.");
  }
  if (!load.Find("tgt") || !load.Find("fun")) return ClearError("publish needs tgt and fun");
  if (!Allows(ctx, ctx.authenticator->AuthList(*checked), load)) {
    spdlog::warn("publish refused: external_auth does not allow {} ({}) to run {} on {}",
                 checked->name, checked->eauth, load.Find("fun")->ToJson(),
                 load.Find("tgt")->ToJson());
    return NamedError("AuthorizationError", "Authorization error occurred.");
  }
  load.Set("user", checked->name);
  return "";
}

// Salt's check_authentication for auth type "user" and a key that is not root's: the load's
// user must be the key's (authenticate_key), with a non-empty publisher_acl entry that
// allows the publish (saltutil.find_job always). Returns the error reply, or empty.
std::string CheckUserPublish(MasterContext& ctx, const wire::Value& load, const std::string& user) {
  const std::string* claimed = load.FindStr("user");
  const wire::Array auth_list =
      auth::PublisherAuthList(ctx.authenticator->options().publisher_acl, user);
  if (!claimed || *claimed != user || auth_list.empty()) {
    spdlog::warn("publish refused: the key of {} was sent for user {}", user,
                 claimed ? *claimed : "(none)");
    return AuthError();
  }
  if (!load.Find("tgt") || !load.Find("fun")) return ClearError("publish needs tgt and fun");
  const wire::Value* fun = load.Find("fun");
  if (fun->str() && *fun->str() == "saltutil.find_job") return "";
  if (!Allows(ctx, auth_list, load)) {
    spdlog::warn("publish refused: publisher_acl does not allow {} to run {} on {}", user,
                 fun->ToJson(), load.Find("tgt")->ToJson());
    return NamedError("AuthorizationError", "Authorization error occurred.");
  }
  return "";
}

void Publish(MasterContext& ctx, wire::Value load, std::function<void(std::string)> reply) {
  if (ctx.authenticator) {
    const wire::Value& blacklist = ctx.authenticator->options().publisher_acl_blacklist;
    const std::string* user = load.FindStr("user");
    const wire::Value* fun = load.Find("fun");
    if ((user && auth::UserBlacklisted(blacklist, *user)) ||
        (fun && auth::FunBlacklisted(blacklist, *fun))) {
      spdlog::error(
          "{} does not have permissions to run {}. Please contact your local administrator if "
          "you believe this is in error.",
          user ? *user : "(no user)",
          fun ? (fun->str() ? *fun->str() : fun->ToJson()) : "(no function)");
      reply(NamedError("AuthorizationError", "Authorization error occurred."));
      return;
    }
  }
  if (load.Find("token")) {
    if (std::string refused = CheckTokenPublish(ctx, load); !refused.empty()) {
      reply(std::move(refused));
      return;
    }
  } else if (!KeyMatches(ctx, load)) {
    const std::string user = ctx.authenticator ? KeyUser(ctx, load) : "";
    std::string refused = user.empty() ? AuthError() : CheckUserPublish(ctx, load, user);
    if (!refused.empty()) {
      if (user.empty()) spdlog::warn("publish refused: wrong or missing key");
      reply(std::move(refused));
      return;
    }
  }
  load.Erase("key");
  load.Erase("token");
  // Only a minion's minion_pub names its requester (peer.h).
  load.Erase(kPeerRequesterKey);
  reply(ClearReply(PublishJob(ctx, std::move(load))));
}

wire::Value ReturnToValue(const jobs::JobReturn& r) {
  wire::Value v = wire::Value::MapOf({{"return", r.ret}});
  if (r.retcode) v.Set("retcode", *r.retcode);
  if (r.success) v.Set("success", *r.success);
  if (!r.out.empty()) v.Set("out", r.out);
  return v;
}

// `owner`: a publisher_acl user, who may look up only the jobs it published itself.
void LookupJid(MasterContext& ctx, const wire::Value& load, std::function<void(std::string)> reply,
               const std::string& owner = "") {
  const std::string* jid = load.FindStr("jid");
  if (!jid) {
    reply(ClearError("lookup_jid needs a jid"));
    return;
  }
  wire::Value out = wire::Value::MapOf({{"jid", *jid}});
  auto job = ctx.job_cache->LoadJob(*jid);
  if (!owner.empty()) {
    const std::string* user = job.ok() ? job->load.FindStr("user") : nullptr;
    if (!user || *user != owner) {
      reply(AuthError());
      return;
    }
  }
  if (job.ok()) {
    out.Set("job", job->load);
    out.Set("minions", StrList(job->minions));
  } else if (job.error().code != ErrorCode::kNotFound) {
    reply(ClearError("job cache: " + job.error().message));
    return;
  }
  auto returns = ctx.job_cache->LoadReturns(*jid);
  if (!returns.ok()) {
    if (returns.error().code == ErrorCode::kNotFound && !job.ok()) {
      // missing_ok (the jobs runners): an unknown jid is a job with nothing stored, as Salt's
      // returners answer; otherwise an error.
      if (const wire::Value* ok = load.Find("missing_ok"); ok && ok->Truthy()) {
        out.Set("returns", wire::Value::EmptyMap());
        reply(ClearReply(std::move(out)));
        return;
      }
      reply(ClearError("jid " + *jid + " does not exist"));
      return;
    }
    if (returns.error().code != ErrorCode::kNotFound) {
      reply(ClearError("job cache: " + returns.error().message));
      return;
    }
  }
  wire::Value rets = wire::Value::EmptyMap();
  if (returns.ok()) {
    for (const auto& r : *returns) rets.Set(r.minion_id, ReturnToValue(r));
  }
  out.Set("returns", std::move(rets));
  reply(ClearReply(std::move(out)));
}

void ListJobs(MasterContext& ctx, std::function<void(std::string)> reply) {
  auto jobs = ctx.job_cache->ListJobs();
  if (!jobs.ok()) {
    reply(ClearError("job cache: " + jobs.error().message));
    return;
  }
  // Appended, not Value::Set (a linear search each): the cache lists each jid once, and
  // 200,000 jobs made the reply cost 2 * 10^10 compares.
  wire::Map out;
  out.reserve(jobs->size());
  for (auto& j : *jobs) {
    // A job's arguments are the publisher's, or for a job a minion started itself, the
    // minion's: a listing carries at most kMaxListedArgumentBytes of them per job
    // (jobs.lookup_jid and list_job still show them whole).
    wire::Value arguments = std::move(j.arguments);
    if (wire::Pack(arguments).size() > kMaxListedArgumentBytes) {
      arguments = wire::Value(std::string(wire::kValueTrimmed));
    }
    out.emplace_back(wire::Value(j.jid), wire::Value::MapOf({{"Function", j.function},
                                                             {"Arguments", std::move(arguments)},
                                                             {"Target", j.target},
                                                             {"Target-type", j.target_type},
                                                             {"User", j.user},
                                                             {"StartTime", j.start_time}}));
  }
  reply(ClearReply(wire::Value::MapOf({{"jobs", wire::Value(std::move(out))}})));
}

// salt-key's salt/key events, fired for halite-key: it edits the pki dir itself and has no
// event bus of its own, so it hands its changes to the master it runs beside (cli.md).
void KeyEvents(MasterContext& ctx, const wire::Value& load,
               std::function<void(std::string)> reply) {
  constexpr std::size_t kMaxEvents = 100000;
  const wire::Value* events = load.Find("events");
  if (!events || !events->array() || events->array()->size() > kMaxEvents) {
    reply(ClearError("_halite_key_event needs a list of at most 100000 events"));
    return;
  }
  for (const wire::Value& e : *events->array()) {
    const std::string* id = e.FindStr("id");
    const std::string* act = e.FindStr("act");
    const wire::Value* result = e.Find("result");
    if (!id || !keys::ValidMinionId(*id) || !act ||
        (*act != "accept" && *act != "reject" && *act != "delete") || !result ||
        !result->is_bool()) {
      spdlog::warn("_halite_key_event: refused a malformed event: {}", e.ToJson());
      reply(
          ClearError("each event needs id (a valid minion id), act (accept, reject or "
                     "delete) and result (a bool)"));
      return;
    }
  }
  for (const wire::Value& e : *events->array()) {
    ctx.events->Fire("salt/key", wire::Value::MapOf({{"result", *e.Find("result")},
                                                     {"act", *e.FindStr("act")},
                                                     {"id", *e.FindStr("id")}}));
  }
  reply(ClearReply(wire::Value::MapOf({{"fired", events->array()->size()}})));
}

// An event for halite-api (salt/netapi/hook/...), fired on this master's bus like any other.
void FireEvent(MasterContext& ctx, const wire::Value& load,
               std::function<void(std::string)> reply) {
  const std::string* tag = load.FindStr("tag");
  const wire::Value* data = load.Find("data");
  if (!tag || !wire::ValidEventTag(*tag) || !data || !data->is_map()) {
    reply(ClearError("_halite_fire_event needs a valid tag and a map of data"));
    return;
  }
  ctx.events->Fire(*tag, *data);
  reply(ClearReply(wire::Value::MapOf({{"fired", true}})));
}

// salt --preview-target and --batch-safe-limit: whom a target matches, as a publish would
// resolve it (LocalClient.gather_minions).
void PreviewTarget(MasterContext& ctx, const wire::Value& load,
                   std::function<void(std::string)> reply) {
  const wire::Value* tgt = load.Find("tgt");
  if (!tgt) {
    reply(ClearError("_halite_preview_target needs tgt"));
    return;
  }
  const std::string* type = load.FindStr("tgt_type");
  const std::string* delimiter = load.FindStr("delimiter");
  auto resolved = ResolveTargets(ctx, *tgt, type ? *type : "glob", delimiter ? *delimiter : ":");
  if (!resolved.ok()) {
    reply(ClearError(resolved.error().message));
    return;
  }
  reply(ClearReply(wire::Value::MapOf({{"minions", StrList(resolved->minions)}})));
}

// manage.present and friends: the minions presence.h counts as present, {id: ""} (no
// address: presence is by identity, not by connection).
void PresenceList(MasterContext& ctx, std::function<void(std::string)> reply) {
  wire::KeyedMap present;  // 10,000 ids: Value::Set would compare each with those before
  if (ctx.presence) {
    for (const auto& id : ctx.presence->Present(2 * ctx.config->loop_interval)) {
      present.Set(id, "");
    }
  }
  reply(ClearReply(wire::Value::MapOf({{"present", wire::Value(std::move(present).Take())}})));
}

}  // namespace

void HandleClear(MasterContext& ctx, const std::string& cmd, wire::Value load,
                 std::function<void(std::string)> reply) {
  if (cmd == "publish") return Publish(ctx, std::move(load), std::move(reply));
  if (cmd == "ping") {
    // Salt echoes the load. A stranger's ping of max_request_bytes was echoed whole, and
    // with a connection that reads nothing each echo stayed queued (finding 22): only a
    // small load is echoed.
    std::string echo = wire::Pack(load);
    if (echo.size() > kMaxPingEchoBytes) echo = wire::Pack(wire::Value("bad load"));
    reply(std::move(echo));
    return;
  }
  if (cmd.rfind("_halite_", 0) == 0) {
    if (!KeyMatches(ctx, load)) {
      // A publisher_acl user's CLI: it proves its event subscription and looks up its own
      // jobs; nothing else.
      const std::string user = KeyUser(ctx, load);
      if (!user.empty() && cmd == "_halite_probe") {
        const std::string* nonce = load.FindStr("nonce");
        ctx.events->Fire("halite/probe/" + (nonce ? *nonce : std::string()),
                         wire::Value::EmptyMap());
        reply(ClearReply(wire::Value::MapOf({{"ok", true}})));
        return;
      }
      if (!user.empty() && cmd == "_halite_lookup_jid") {
        return LookupJid(ctx, load, std::move(reply), user);
      }
      reply(AuthError());
      return;
    }
    if (cmd == "_halite_lookup_jid") return LookupJid(ctx, load, std::move(reply));
    if (cmd == "_halite_list_jobs") return ListJobs(ctx, std::move(reply));
    if (cmd == "_halite_key_event") return KeyEvents(ctx, load, std::move(reply));
    if (cmd == "_halite_presence") return PresenceList(ctx, std::move(reply));
    if (cmd == "_halite_fire_event") return FireEvent(ctx, load, std::move(reply));
    if (cmd == "_halite_preview_target") return PreviewTarget(ctx, load, std::move(reply));
    if (cmd == "_halite_probe") {
      // Lets a client prove its event subscription is live before it publishes.
      const std::string* nonce = load.FindStr("nonce");
      ctx.events->Fire("halite/probe/" + (nonce ? *nonce : std::string()), wire::Value::EmptyMap());
      reply(ClearReply(wire::Value::MapOf({{"ok", true}})));
      return;
    }
    if (cmd == "_halite_cluster_status") {
      if (!ctx.cluster_status) {
        reply(ClearError("this master is not part of a cluster (cluster_id is not set)"));
        return;
      }
      reply(ClearReply(ctx.cluster_status()));
      return;
    }
    if (cmd == "_halite_status") {
      const Counters& c = *ctx.counters;
      reply(ClearReply(wire::Value::MapOf({{"id", ctx.config->id},
                                           {"auth_accepted", c.auth_accepted.load()},
                                           {"auth_pending", c.auth_pending.load()},
                                           {"returns_stored", c.returns_stored.load()},
                                           {"publishes", c.publishes.load()}})));
      return;
    }
  }
  reply(wire::Pack(wire::Value::EmptyMap()));
}

}  // namespace halite::master
