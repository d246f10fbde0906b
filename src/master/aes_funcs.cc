// salt-wire 6.2: the encrypted request commands a running minion needs.
#include <fnmatch.h>
#include <spdlog/spdlog.h>

#include "halite/common/logging.h"
#include "halite/jobs/jid.h"
#include "halite/keys/key_store.h"
#include "halite/master/file_recv.h"
#include "halite/master/fileserver.h"
#include "halite/master/handlers.h"
#include "halite/master/mine.h"
#include "halite/master/peer.h"
#include "halite/master/targeting.h"
#include "halite/pillar/compiler.h"
#include "halite/wire/encoding.h"
#include "halite/wire/event.h"
#include "halite/wire/regex.h"
#include "halite/wire/target.h"

namespace halite::master {

namespace {

// Salt's blacklist (salt-wire 6.2) plus what halite also refuses from minions: anything that
// could pose as a peer, a key event, another minion's return, or a master-side event. Each
// pattern also blocks everything under it (`salt/auth` blocks `salt/auth/x`), since
// subscribers match tags by prefix. Tags are checked exactly as they will be packed: a tag
// that ValidEventTag refuses never gets here.
bool EventTagAllowedFromMinion(const std::string& tag) {
  static const char* const kBlocked[] = {
      "salt/job/*/publish",
      "salt/job/*/new",
      "salt/job/*/return",
      "salt/job/*/ret",
      "salt/key",
      "salt/auth",
      "salt/cloud",
      "salt/run",
      "salt/cluster",
      "salt/wheel/*/new",
      "salt/wheel/*/return",
      "cluster",
      "minion/refresh",
      "halite",
      "key",
  };
  if (!wire::ValidEventTag(tag)) return false;
  for (const char* pattern : kBlocked) {
    if (fnmatch(pattern, tag.c_str(), 0) == 0) return false;
    if (fnmatch((std::string(pattern) + "/*").c_str(), tag.c_str(), 0) == 0) return false;
  }
  return true;
}

// Tags that name their minion (salt/minion/<id>/..., salt/beacon/<id>/...,
// salt/job/<jid>/prog/<id>/...) must name the sender.
bool TagNamesOnlyItsSender(std::string_view tag, std::string_view id) {
  auto segment = [&](std::size_t n) -> std::optional<std::string_view> {
    std::size_t start = 0;
    for (std::size_t i = 0; i < n; ++i) {
      start = tag.find('/', start);
      if (start == std::string_view::npos) return std::nullopt;
      ++start;
    }
    std::size_t end = tag.find('/', start);
    return tag.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  };
  if (tag.starts_with("salt/minion/") || tag.starts_with("salt/beacon/")) {
    return segment(2) == id;
  }
  if (tag.starts_with("salt/job/") && segment(3) == "prog") return segment(4) == id;
  return true;
}

// Peer origin is marked out of band in halite; a minion may never supply it, neither at the
// top of the event data nor inside the `data` of the single-tag form.
bool CarriesPeerId(const wire::Value& data) {
  if (data.Find("__peer_id") != nullptr) return true;
  const wire::Value* inner = data.Find("data");
  return inner && inner->Find("__peer_id") != nullptr;
}

Result<std::shared_ptr<const jobs::Job>> LoadJobOf(MasterContext& ctx, const std::string& jid) {
  if (ctx.recent_jobs) return ctx.recent_jobs->Load(*ctx.job_cache, jid);
  HALITE_ASSIGN_OR_RETURN(jobs::Job job, ctx.job_cache->LoadJob(jid));
  return std::make_shared<const jobs::Job>(std::move(job));
}

// Saves a job a minion started itself (`jid: req`, its scheduler, salt-call) as a job that
// targets that minion alone. False (logged) when the job cache refuses it.
bool SaveOwnJob(MasterContext& ctx, const std::string& jid, wire::Value saved,
                const std::string& id) {
  saved.Set("tgt_type", "glob");
  saved.Set("tgt", id);
  // What marks it as the minion's own (as in Salt, whose saved load is the `_return`'s): no
  // master publishes it (JobCacheScan), whatever else the minion put in it (finding 24).
  saved.Set("cmd", jobs::kMinionJobCmd);
  if (auto st = ctx.job_cache->SaveJob(jobs::Job{jid, std::move(saved), {id}}); !st.ok()) {
    spdlog::error("cannot save minion-initiated job {}: {}", jid, st.error().ToString());
    return false;
  }
  return true;
}

void HandleReturn(MasterContext& ctx, AesRequest req) {
  wire::Value& load = req.load;
  const std::string* jid_p = load.FindStr("jid");
  const wire::Value* ret = load.Find("return");
  if (!jid_p || !ret || req.id.empty() || !keys::ValidMinionId(req.id)) {
    spdlog::warn("_return from '{}' lacks jid, return or id; ignored", req.id);
    req.reply(ReplyKind::kEncrypted, wire::Value());
    return;
  }
  std::string jid = *jid_p;
  if (jid == "req") {
    jid = ctx.jids->Next();
    load.Set("jid", jid);
    wire::Value saved = load;
    if (!saved.Find("arg") || !saved.Find("arg")->Truthy()) {
      saved.Set("arg", load.Find("fun_args") ? *load.Find("fun_args") : wire::Value::EmptyArray());
    }
    if (!SaveOwnJob(ctx, jid, std::move(saved), req.id)) {
      req.reply(ReplyKind::kPlain, wire::Value("Server-side exception handling payload"));
      return;
    }
  } else if (jid == "nocache") {
    ctx.events->Fire("salt/job/" + jid + "/ret/" + req.id, load);
    req.reply(ReplyKind::kEncrypted, wire::Value());
    return;
  } else if (!jobs::IsJid(jid)) {
    spdlog::warn("_return from '{}' with a malformed jid; ignored", req.id);
    req.reply(ReplyKind::kEncrypted, wire::Value());
    return;
  } else {
    auto job = LoadJobOf(ctx, jid);
    if (job.ok()) {
      if (!ReturnBelongsToJob(**job, req.id)) {
        ctx.counters->returns_refused++;
        spdlog::warn("_return from '{}' for job {} which did not target it; refused", req.id, jid);
        req.reply(ReplyKind::kEncrypted, wire::Value(false));
        return;
      }
    } else if (job.error().code == ErrorCode::kNotFound) {
      // A job the minion started itself (its scheduler, salt-call): Salt stores it under the
      // minion's jid. Saved as a job of that minion alone, so it can never add to another's.
      wire::Value saved = load;
      saved.Erase("return");
      if (!SaveOwnJob(ctx, jid, std::move(saved), req.id)) {
        req.reply(ReplyKind::kPlain, wire::Value("Server-side exception handling payload"));
        return;
      }
    } else {
      // The job cache is unreachable: the job cannot be checked, and refusing would lose the
      // return. StoreReturn below holds it until the cache is back (returns_in_flight).
      spdlog::warn("_return from '{}' for {} stored unchecked: job cache: {}", req.id, jid,
                   job.error().ToString());
    }
  }
  jobs::JobReturn r;
  r.jid = jid;
  r.minion_id = req.id;
  r.ret = *ret;
  if (const wire::Value* v = load.Find("retcode")) r.retcode = v->int64();
  if (const wire::Value* v = load.Find("success")) r.success = v->boolean();
  if (const std::string* out = load.FindStr("out")) r.out = *out;
  if (!load.Find("fun")) {
    if (const wire::Value* f = ret->Find("fun")) load.Set("fun", *f);
  }
  r.load = load;
  std::string tag = "salt/job/" + jid + "/ret/" + req.id;
  if (!ctx.config->store_returns) {
    // Salt's `job_cache: False`: the job was saved when published, its returns go to the
    // event bus only (store_job returns before the returner), so jobs.lookup_jid finds none.
    ctx.events->Fire(tag, std::move(load));
    req.reply(ReplyKind::kEncrypted, wire::Value());
    return;
  }
  auto reply = std::move(req.reply);
  MasterContext* c = &ctx;
  auto started = std::chrono::steady_clock::now();
  ctx.counters->returns_in_flight++;
  ctx.job_cache->StoreReturn(
      std::move(r), [c, reply = std::move(reply), tag = std::move(tag), event = std::move(load),
                     started](Result<jobs::StoreOutcome> outcome) mutable {
        c->counters->returns_in_flight--;
        c->counters->ObserveStoreLatency(std::chrono::steady_clock::now() - started);
        if (!outcome.ok()) {
          // Not durable: not acknowledged, and not answered either. An error answer made the
          // minion re-auth and resend at once to this same master, then give the return up
          // (tools/chaos --faults storage: 29 of 979 returns lost); unanswered, it times out
          // and sends again on a new connection, which HAProxy gives to a healthy master
          // once this one's /health fails (it cannot store).
          c->counters->returns_failed++;
          // Once a second at most: an outage fails every return of every minion, again at
          // each retry (halite_returns_total{outcome="failed"} counts them all).
          static LogLimiter limiter(std::chrono::seconds(1));
          if (auto held_back = limiter.Pass()) {
            spdlog::error(
                "cannot store return for {}: {}; not answered, so the minion sends it "
                "again{}",
                tag, outcome.error().ToString(), SuppressedSuffix(*held_back));
          }
          reply(ReplyKind::kNone, wire::Value());
          return;
        }
        spdlog::debug("stored {} ({})", tag,
                      *outcome == jobs::StoreOutcome::kDuplicate ? "duplicate" : "new");
        if (*outcome == jobs::StoreOutcome::kDuplicate) {
          c->counters->returns_duplicate++;
        } else {
          c->counters->returns_stored++;
        }
        // Fired again for a duplicate, as Salt does: the first event may have been lost.
        c->events->Fire(tag, std::move(event));
        reply(ReplyKind::kEncrypted, wire::Value());
      });
}

void HandlePillar(MasterContext& ctx, AesRequest req) {
  const wire::Value* grains_in = req.load.Find("grains");
  auto minion_pub = ctx.minion_keys->Get(req.id);
  if (!minion_pub.ok()) {
    req.reply(ReplyKind::kPlain, wire::Value::MapOf({{"error", "AES key not found"}}));
    return;
  }
  wire::Value pillar = wire::Value::EmptyMap();
  if (grains_in && grains_in->is_map() && keys::ValidMinionId(req.id)) {
    wire::Value grains = *grains_in;
    grains.Set("id", req.id);
    if (auto compiler = ctx.pillar.Get()) {
      pillar::PillarRequest preq;
      preq.id = req.id;
      preq.grains = grains;
      if (const std::string* s = req.load.FindStr("saltenv")) preq.saltenv = *s;
      if (const std::string* s = req.load.FindStr("pillarenv")) preq.pillarenv = *s;
      if (const wire::Value* o = req.load.Find("pillar_override"); o && o->is_map()) {
        preq.pillar_override = *o;
      }
      // saltutil.runner('mine.get', ...) in a template: Salt's runner asks as the master
      // itself (its own id, so the master's entry in `mine_get` applies), not as the minion.
      preq.host = [&ctx](const std::string& name, const wire::Value& args) -> Result<wire::Value> {
        if (name != "mine.get") return Error::NotFound("no host function " + name);
        const wire::Value* tgt = args.Find("tgt");
        const wire::Value* fun = args.Find("fun");
        const std::string* type = args.FindStr("tgt_type");
        if (!tgt || !fun) return Error::InvalidArgument("mine.get needs tgt and fun");
        return MineGet(ctx, ctx.config->id, *tgt, *fun, type ? *type : "glob");
      };
      pillar = compiler->Compile(preq);
    }
    if (ctx.config->minion_data_cache && !req.replayed) {
      if (auto st = ctx.minion_data->Store(req.id, grains, pillar); !st.ok()) {
        spdlog::error("minion data cache for {}: {}", req.id, st.error().ToString());
      }
    }
  }
  auto enc_algo = wire::ParseEncAlgo(req.enc_algo);
  auto sig_algo = wire::ParseSigAlgo(req.sig_algo);
  if (!enc_algo.ok() || !sig_algo.ok()) {
    req.reply(ReplyKind::kPlain, wire::Value::MapOf({{"error", "bad load"}}));
    return;
  }
  std::string one_shot = wire::Crypticle::GenerateKeyString();
  auto crypticle = wire::Crypticle::FromKeyString(one_shot);
  auto key_ct = minion_pub->Encrypt(one_shot, *enc_algo);
  if (!crypticle.ok() || !key_ct.ok()) {
    req.reply(ReplyKind::kPlain, wire::Value::MapOf({{"error", "bad load"}}));
    return;
  }
  std::string pillar_field;
  if (req.version > 1) {
    if (!req.nonce) {
      req.reply(ReplyKind::kPlain,
                wire::Value::MapOf({{"error", "Nonce not included in request"}}));
      return;
    }
    std::string data = wire::Pack(
        wire::Value::MapOf({{"key", *key_ct}, {"pillar", pillar}, {"nonce", *req.nonce}}));
    auto sig = ctx.signing_key->Sign(data, *sig_algo);
    if (!sig.ok()) {
      req.reply(ReplyKind::kPlain, wire::Value::MapOf({{"error", "bad load"}}));
      return;
    }
    pillar_field = crypticle->Dumps(wire::Value::MapOf({{"data", data}, {"sig", *sig}}));
  } else {
    pillar_field = crypticle->Dumps(pillar);
  }
  req.reply(ReplyKind::kPlain,
            wire::Value::MapOf({{"key", std::move(*key_ct)}, {"pillar", std::move(pillar_field)}}));
}

bool FireFromMinion(MasterContext& ctx, const std::string& id, const std::string& tag,
                    wire::Value data, const std::string* pretag) {
  if (!EventTagAllowedFromMinion(tag) || !TagNamesOnlyItsSender(tag, id) || CarriesPeerId(data)) {
    ctx.counters->events_rejected++;
    spdlog::warn("dropped event '{}' from minion '{}': tag or fields not allowed",
                 wire::ValidEventTag(tag) ? tag : "(malformed tag)", id);
    return false;
  }
  // Salt's max_event_size: large values become "VALUE_TRIMMED"; what is still too large is
  // not fired (every subscriber and every peer would get it).
  const auto max_size = static_cast<std::size_t>(ctx.config->max_event_size);
  if (wire::TrimEventData(data, max_size) == wire::EventTrim::kTooLarge) {
    ctx.counters->events_too_large++;
    spdlog::warn(
        "dropped event '{}' from minion '{}': over max_event_size ({} bytes) after trimming", tag,
        id, max_size);
    return false;
  }
  if (pretag && !pretag->empty()) {
    std::string full = *pretag + "/" + tag;
    if (EventTagAllowedFromMinion(full) && TagNamesOnlyItsSender(full, id)) {
      ctx.events->Fire(full, data);
    }
  }
  ctx.events->Fire(tag, std::move(data));
  return true;
}

void HandleMinionEvent(MasterContext& ctx, AesRequest req) {
  const wire::Value& load = req.load;
  const std::string* pretag = load.FindStr("pretag");
  if (req.id.empty()) {
    req.reply(ReplyKind::kEncrypted, wire::Value());
    return;
  }
  const wire::Array* events = load.Find("events") ? load.Find("events")->array() : nullptr;
  const std::string* single_tag = load.FindStr("tag");
  const bool single = !events && single_tag && load.Find("data");
  std::size_t wanted = events ? events->size() : (single ? 1 : 0);
  const std::size_t per_request = static_cast<std::size_t>(ctx.config->max_events_per_request);
  std::size_t granted = std::min(wanted, per_request);
  if (ctx.event_limits && granted > 0) {
    granted = ctx.event_limits->Take(req.id, granted, std::chrono::steady_clock::now());
  }
  if (granted < wanted) {
    ctx.counters->events_rate_limited += wanted - granted;
    spdlog::warn(
        "minion '{}' sent {} events; {} dropped by max_events_per_request ({}) or "
        "minion_events_per_second ({})",
        req.id, wanted, wanted - granted, per_request, ctx.config->minion_events_per_second);
  }
  if (events) {
    for (std::size_t i = 0; i < granted; ++i) {
      const wire::Value& entry = (*events)[i];
      const std::string* tag = entry.FindStr("tag");
      if (!tag) continue;
      const wire::Value* data = entry.Find("data");
      wire::Value payload = data ? *data : entry;
      if (!payload.is_map()) payload = wire::Value::MapOf({{"data", payload}});
      FireFromMinion(ctx, req.id, *tag, std::move(payload), pretag);
    }
  } else if (single && granted == 1) {
    // The single-tag form fires the whole load as the data (salt-wire 6.2), but, unlike
    // Salt 3007.8, it goes through the same checks as the list form.
    FireFromMinion(ctx, req.id, *single_tag, load, pretag);
  }
  req.reply(ReplyKind::kEncrypted, wire::Value());
}

// salt-wire 6.2: _mine, _mine_delete, _mine_flush, _mine_get.
void HandleMine(MasterContext& ctx, const std::string& cmd, AesRequest req) {
  if (req.id.empty() || !keys::ValidMinionId(req.id)) {
    req.reply(ReplyKind::kEncrypted, wire::Value(false));
    return;
  }
  Status st = OkStatus();
  if (cmd == "_mine") {
    const wire::Value* data = req.load.Find("data");
    const bool clear = req.load.Find("clear") && req.load.Find("clear")->Truthy();
    const auto max = static_cast<std::size_t>(ctx.config->mine_max_bytes);  // read as >= 0
    st = data ? ctx.minion_data->UpdateMine(req.id, *data, clear, max)
              : Status(Error::InvalidArgument("_mine without data"));
    if (!st.ok() && st.error().code == ErrorCode::kResourceExhausted) {
      ctx.counters->mine_refused++;
      static LogLimiter limiter(std::chrono::seconds(10));
      if (auto n = limiter.Pass()) {
        spdlog::warn("_mine from '{}' refused: {} (mine_max_bytes){}", req.id, st.error().message,
                     SuppressedSuffix(*n));
      }
      req.reply(ReplyKind::kEncrypted, wire::Value(false));
      return;
    }
  } else if (cmd == "_mine_delete") {
    const std::string* fun = req.load.FindStr("fun");
    st = fun ? ctx.minion_data->DeleteMine(req.id, *fun) : OkStatus();
  } else if (cmd == "_mine_flush") {
    st = ctx.minion_data->FlushMine(req.id);
  } else {  // _mine_get
    std::string tgt_type = "glob";
    if (const std::string* t = req.load.FindStr("tgt_type")) tgt_type = *t;
    if (const std::string* t = req.load.FindStr("expr_form")) tgt_type = *t;
    const wire::Value* tgt = req.load.Find("tgt");
    const wire::Value* fun = req.load.Find("fun");
    wire::Value out =
        tgt && fun ? MineGet(ctx, req.id, *tgt, *fun, tgt_type) : wire::Value::EmptyMap();
    req.reply(ReplyKind::kEncrypted, std::move(out));
    return;
  }
  if (!st.ok()) spdlog::error("{} from {}: {}", cmd, req.id, st.error().ToString());
  req.reply(ReplyKind::kEncrypted, wire::Value(st.ok()));
}

}  // namespace

void DispatchAes(MasterContext& ctx, const std::string& cmd, AesRequest req) {
  if (cmd == "_return") return HandleReturn(ctx, std::move(req));
  if (cmd == "_pillar") return HandlePillar(ctx, std::move(req));
  if (cmd == "_minion_event") return HandleMinionEvent(ctx, std::move(req));
  if (auto handled = HandleFileCommand(*ctx.config.Get(), ctx.file_hashes, cmd, req.load)) {
    req.reply(ReplyKind::kEncrypted, std::move(*handled));
    return;
  }
  if (cmd == "_file_recv") {
    Status st = ReceiveFileChunk(*ctx.config.Get(), req.id, req.load);
    if (!st.ok()) spdlog::warn("_file_recv from {}: {}", req.id, st.error().ToString());
    req.reply(ReplyKind::kEncrypted, wire::Value(st.ok()));
    return;
  }
  if (cmd == "_mine" || cmd == "_mine_delete" || cmd == "_mine_flush" || cmd == "_mine_get") {
    return HandleMine(ctx, cmd, std::move(req));
  }
  if (HandlePeerCommand(ctx, cmd, req)) return;
  spdlog::debug("unknown aes command '{}' from '{}'", cmd, req.id);
  req.reply(ReplyKind::kEncrypted, wire::Value::EmptyMap());
}

}  // namespace halite::master
