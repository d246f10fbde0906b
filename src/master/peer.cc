// Salt's peer publishing and peer runners (include/halite/master/peer.h).
#include "halite/master/peer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "halite/client/cli_args.h"
#include "halite/jobs/jid.h"
#include "halite/keys/key_store.h"
#include "halite/master/publish_job.h"
#include "halite/master/targeting.h"
#include "halite/wire/regex.h"

namespace halite::master {
namespace {

// re.match(pattern, text), as Salt's ACLs use it; a bad pattern matches nothing.
bool ReMatch(const std::string& pattern, const std::string& text) {
  return wire::ReMatchOrFalse(pattern, text);
}

// Every pattern of `acl` entries whose id regex matches `id`.
std::vector<std::string> PermsFor(const std::map<std::string, std::vector<std::string>>& acl,
                                  const std::string& id) {
  std::vector<std::string> perms;
  for (const auto& [id_pattern, allowed] : acl) {
    if (ReMatch(id_pattern, id)) perms.insert(perms.end(), allowed.begin(), allowed.end());
  }
  return perms;
}

bool Allowed(const std::vector<std::string>& perms, const std::string& fun) {
  return std::any_of(perms.begin(), perms.end(),
                     [&](const std::string& p) { return ReMatch(p, fun); });
}

std::set<std::string, std::less<>> NoParse(const wire::Value& load) {
  std::set<std::string, std::less<>> out;
  if (const wire::Value* v = load.Find("no_parse"); v && v->array()) {
    for (const wire::Value& name : *v->array()) {
      if (const std::string* s = name.str()) out.insert(*s);
    }
  }
  return out;
}

std::vector<std::string> SplitOn(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// Python's str.split(): words between runs of whitespace.
wire::Value Words(const std::string& text) {
  wire::Array out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return wire::Value(std::move(out));
}

// Salt's publish_validate: a pillar target must match exactly, so that a minion cannot reach
// minions by globbing or regex over pillar values it may not see. Refused here by shape.
bool PillarGlobbing(const std::string& tgt, const std::string& tgt_type) {
  auto has_glob = [](std::string_view s) { return s.find_first_of("*?[") != std::string::npos; };
  if (tgt_type == "pillar_pcre") return true;
  if (tgt_type == "pillar") return has_glob(tgt);
  if (tgt_type != "compound") return false;
  for (const std::string& word : SplitOn(tgt, ' ')) {
    std::string_view w = word;
    while (!w.empty() && w.front() == '(') w.remove_prefix(1);
    if (w.starts_with("J@")) return true;
    if (w.starts_with("I@") && has_glob(w.substr(2))) return true;
  }
  return false;
}

void Refuse(AesRequest& req, const std::string& cmd, const std::string& why) {
  spdlog::warn("{} from '{}' refused: {}", cmd, req.id, why);
  req.reply(ReplyKind::kEncrypted, wire::Value::EmptyMap());
}

// minion_pub (publish.publish, publish.full_data): the checks of Salt's
// __verify_minion_publish, then a publish as the master's local client would send it.
void MinionPub(MasterContext& ctx, const std::string& cmd, AesRequest& req) {
  const wire::Value& load = req.load;
  const std::string* fun = load.FindStr("fun");
  const wire::Value* arg = load.Find("arg");
  const wire::Value* tgt = load.Find("tgt");
  if (!fun || !arg || !arg->array() || !tgt || !tgt->str() || !load.Find("ret")) {
    return Refuse(req, cmd, "the load needs fun, arg (a list), tgt and ret");
  }
  const auto config = ctx.config.Get();
  std::string tgt_type = load.FindStr("tgt_type") ? *load.FindStr("tgt_type") : "glob";
  const std::vector<std::string> perms = PermsFor(config->peer, req.id);
  std::vector<std::string> funs = SplitOn(*fun, ',');
  for (const std::string& f : funs) {
    // A published publish would let minions command minions without end.
    if (f.starts_with("publish.")) return Refuse(req, cmd, "publish.* cannot be published");
    // Every function of a multi-function job must be allowed (Salt lets one allowed name
    // carry the others).
    if (!Allowed(perms, f)) return Refuse(req, cmd, "peer: allows it no function " + f);
  }
  if (PillarGlobbing(*tgt->str(), tgt_type)) {
    return Refuse(req, cmd, "a pillar target must match exactly (no glob or pcre)");
  }
  if (tgt_type.starts_with("node")) {
    if (!config->nodegroups.contains(*tgt->str())) {
      return Refuse(req, cmd, "no nodegroup " + *tgt->str());
    }
    tgt_type = "nodegroup";
  }
  wire::Value fun_value = *load.Find("fun");
  wire::Value pub_arg;
  if (funs.size() > 1) {
    // fun 'a,b', arg ['cat /proc/cpuinfo', ''] -> fun [a, b], arg [[cat, /proc/cpuinfo], []],
    // as Salt splits them.
    wire::Array names;
    for (const std::string& f : funs) names.emplace_back(f);
    fun_value = wire::Value(std::move(names));
    wire::Array lists;
    for (const wire::Value& a : *arg->array()) {
      lists.push_back(a.str() ? Words(*a.str()) : wire::Value::EmptyArray());
    }
    pub_arg = wire::Value(std::move(lists));
  } else {
    pub_arg = wire::Value(client::ParseInputValues(*arg->array(), NoParse(load)));
  }
  wire::Value pub = wire::Value::MapOf({{"tgt", *tgt},
                                        {"fun", fun_value},
                                        {"arg", pub_arg},
                                        {"tgt_type", tgt_type},
                                        {"ret", *load.Find("ret")},
                                        {"user", config->user},
                                        {"kwargs", wire::Value::MapOf({{"id", req.id}})}});
  if (const wire::Value* tmo = load.Find("tmo"); tmo && tmo->int64() && *tmo->int64() > 0) {
    pub.Set("to", *tmo->int64());
  }
  pub.Set(kPeerRequesterKey, req.id);
  wire::Value published = PublishJob(ctx, std::move(pub));
  const std::string* jid = published.FindStr("jid");
  if (!jid) {
    // Salt's LocalClient.cmd_async gives jid 0 for a target that matched nobody.
    const std::string* error = published.FindStr("error");
    spdlog::info("{} from '{}' published nothing: {}", cmd, req.id, error ? *error : "");
    req.reply(ReplyKind::kEncrypted, wire::Value::MapOf({{"jid", std::int64_t{0}},
                                                         {"minions", wire::Value::EmptyArray()}}));
    return;
  }
  spdlog::info("minion '{}' published {} as job {}", req.id, *fun, *jid);
  req.reply(ReplyKind::kEncrypted,
            wire::Value::MapOf({{"jid", *jid}, {"minions", *published.Find("minions")}}));
}

// pub_ret: the returns so far of a job the requester published, as Salt's
// get_cache_returns gives them ({minion: {"ret": ..., "out": ...}}).
void PubRet(MasterContext& ctx, AesRequest& req) {
  const std::string* jid = req.load.FindStr("jid");
  if (!jid || !jobs::IsJid(*jid)) {
    req.reply(ReplyKind::kEncrypted, wire::Value::EmptyMap());
    return;
  }
  auto job = ctx.recent_jobs ? ctx.recent_jobs->Load(*ctx.job_cache, *jid)
                             : [&]() -> Result<std::shared_ptr<const jobs::Job>> {
    HALITE_ASSIGN_OR_RETURN(jobs::Job j, ctx.job_cache->LoadJob(*jid));
    return std::make_shared<const jobs::Job>(std::move(j));
  }();
  if (!job.ok()) {
    if (job.error().code != ErrorCode::kNotFound) {
      spdlog::error("pub_ret from '{}' for {}: {}", req.id, *jid, job.error().ToString());
    }
    req.reply(ReplyKind::kEncrypted, wire::Value::EmptyMap());
    return;
  }
  const std::string* publisher = (*job)->load.FindStr(kPeerRequesterKey);
  if (!publisher || *publisher != req.id) {
    return Refuse(req, "pub_ret", "job " + *jid + " was not published by this minion");
  }
  wire::Value out = wire::Value::EmptyMap();
  auto returns = ctx.job_cache->LoadReturns(*jid);
  if (returns.ok()) {
    for (const jobs::JobReturn& r : *returns) {
      wire::Value entry = wire::Value::MapOf({{"ret", r.ret}});
      if (!r.out.empty()) entry.Set("out", r.out);
      out.Set(r.minion_id, std::move(entry));
    }
  } else if (returns.error().code != ErrorCode::kNotFound) {
    spdlog::error("pub_ret from '{}' for {}: {}", req.id, *jid, returns.error().ToString());
  }
  req.reply(ReplyKind::kEncrypted, std::move(out));
}

// minion_runner (publish.runner): a runner `peer_run:` allows this id.
void MinionRunner(MasterContext& ctx, AesRequest& req) {
  const std::string* fun = req.load.FindStr("fun");
  const wire::Value* arg = req.load.Find("arg");
  if (!fun || !arg || !arg->array()) {
    return Refuse(req, "minion_runner", "the load needs fun and arg (a list)");
  }
  if (!Allowed(PermsFor(ctx.config->peer_run, req.id), *fun)) {
    return Refuse(req, "minion_runner", "peer_run: allows it no runner " + *fun);
  }
  if (!ctx.peer_runner) return Refuse(req, "minion_runner", "this master runs no runners");
  spdlog::info("minion '{}' runs runner {}", req.id, *fun);
  auto result =
      ctx.peer_runner(*fun, client::ParseInputValues(*arg->array(), NoParse(req.load)), req.id);
  // Salt hands back whatever the runner gave, an error's text included.
  req.reply(ReplyKind::kEncrypted,
            result.ok() ? std::move(*result) : wire::Value(result.error().message));
}

}  // namespace

bool HandlePeerCommand(MasterContext& ctx, const std::string& cmd, AesRequest& req) {
  if (cmd != "minion_pub" && cmd != "minion_publish" && cmd != "pub_ret" &&
      cmd != "minion_runner") {
    return false;
  }
  if (!req.id_proven || !keys::ValidMinionId(req.id)) {
    Refuse(req, cmd, "the requester's id is not proven by a tok (upgrade the minion)");
    return true;
  }
  if (cmd == "minion_publish") {
    // The synchronous form that waits on the master; publish.py in 3006/3007 sends minion_pub
    // and polls pub_ret instead, so halite does not hold a worker for it.
    Refuse(req, cmd, "not supported: halite answers minion_pub and pub_ret (Salt 3006+)");
  } else if (cmd == "pub_ret") {
    PubRet(ctx, req);
  } else if (cmd == "minion_runner") {
    MinionRunner(ctx, req);
  } else {
    MinionPub(ctx, cmd, req);
  }
  return true;
}

}  // namespace halite::master
