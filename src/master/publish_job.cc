// salt-master's publish, shared by the CLI's clear `publish` and minions' `minion_pub`.
#include "halite/master/publish_job.h"

#include <spdlog/spdlog.h>

#include "halite/common/logging.h"
#include "halite/jobs/jid.h"
#include "halite/master/targeting.h"

namespace halite::master {

namespace {

wire::Value StrList(const std::vector<std::string>& v) {
  wire::Array a;
  a.reserve(v.size());
  for (const auto& s : v) a.emplace_back(s);
  return wire::Value(std::move(a));
}

}  // namespace

wire::Value MinionPublishLoad(const wire::Value& load) {
  const wire::Value* kwargs = load.Find("kwargs");
  std::string delimiter = ":";
  if (kwargs) {
    if (const std::string* d = kwargs->FindStr("delimiter")) delimiter = *d;
  }
  auto field = [&](const char* key, wire::Value fallback) {
    const wire::Value* v = load.Find(key);
    return v ? *v : fallback;
  };
  wire::Value pub = wire::Value::MapOf({{"fun", field("fun", wire::Value())},
                                        {"arg", field("arg", wire::Value::EmptyArray())},
                                        {"tgt", field("tgt", wire::Value())},
                                        {"jid", field("jid", wire::Value())},
                                        {"ret", field("ret", wire::Value(""))}});
  if (delimiter != ":") pub.Set("delimiter", delimiter);
  if (kwargs) {
    if (const wire::Value* v = kwargs->Find("id")) pub.Set("id", *v);
  }
  pub.Set("tgt_type", field("tgt_type", wire::Value("glob")));
  // The caller's timeout (Salt's LocalClient sends it), as Salt's master passes it on; the
  // publisher keeps the job for replay that long (publish_replay.h).
  if (const wire::Value* to = load.Find("to")) pub.Set("to", *to);
  if (kwargs) {
    for (const char* k :
         {"ret_config", "metadata", "module_executors", "executor_opts", "ret_kwargs"}) {
      if (const wire::Value* v = kwargs->Find(k)) pub.Set(k, *v);
    }
  }
  pub.Set("user", field("user", wire::Value("root")));
  return pub;
}

wire::Value PublishJob(MasterContext& ctx, wire::Value load) {
  const wire::Value* tgt = load.Find("tgt");
  const wire::Value* fun = load.Find("fun");
  if (!tgt || !fun) {
    return wire::Value::MapOf({{"error", "publish needs tgt and fun"}});
  }
  std::string tgt_type = load.FindStr("tgt_type") ? *load.FindStr("tgt_type") : "glob";
  const wire::Value* kwargs = load.Find("kwargs");
  std::string delimiter = ":";
  if (kwargs) {
    if (const std::string* d = kwargs->FindStr("delimiter")) delimiter = *d;
  }
  auto resolved = ResolveTargets(ctx, *tgt, tgt_type, delimiter);
  if (!resolved.ok()) {
    spdlog::warn("publish: {}", Printable(resolved.error().message));
    return wire::Value::MapOf({{"jid", wire::Value()},
                               {"minions", wire::Value::EmptyArray()},
                               {"error", resolved.error().message}});
  }
  if (resolved->minions.empty()) {
    std::string shown = tgt->str() ? *tgt->str() : tgt->ToJson();
    return wire::Value::MapOf({{"jid", wire::Value()},
                               {"minions", wire::Value::EmptyArray()},
                               {"error", "Master could not resolve minions for target " + shown}});
  }
  std::string jid;
  if (const std::string* passed = load.FindStr("jid"); passed && !passed->empty()) {
    if (!jobs::IsJid(*passed)) {
      return wire::Value::MapOf({{"error", "Master failed to assign jid"}});
    }
    jid = *passed;
  } else {
    jid = ctx.jids->Next();
  }
  load.Set("jid", jid);
  std::string user = load.FindStr("user") ? *load.FindStr("user") : "root";
  wire::Value arg = load.Find("arg") ? *load.Find("arg") : wire::Value::EmptyArray();
  // The job is durable before anyone hears of it, so every master can answer for it.
  if (auto st = ctx.job_cache->SaveJob(jobs::Job{jid, load, resolved->minions}); !st.ok()) {
    spdlog::error("publish: cannot save job {}: {}", jid, st.error().ToString());
    return wire::Value::MapOf({{"error", "Master failed to assign jid"}});
  }
  if (ctx.recent_jobs) ctx.recent_jobs->Remember(jobs::Job{jid, load, resolved->minions});
  ctx.events->Fire(jid, wire::Value::MapOf({{"minions", StrList(resolved->minions)}}));
  ctx.events->Fire("salt/job/" + jid + "/new",
                   wire::Value::MapOf({{"jid", jid},
                                       {"tgt_type", tgt_type},
                                       {"tgt", *tgt},
                                       {"user", user},
                                       {"fun", *fun},
                                       {"arg", arg},
                                       {"minions", StrList(resolved->minions)},
                                       {"missing", StrList(resolved->missing)}}));
  wire::Value pub = MinionPublishLoad(load);
  ctx.events->Fire("salt/job/" + jid + "/publish", pub);
  if (auto st = ctx.publisher->Publish(pub); !st.ok()) {
    spdlog::error("publish of job {} refused: {}", jid, st.error().ToString());
    return wire::Value::MapOf(
        {{"jid", wire::Value()},
         {"minions", wire::Value::EmptyArray()},
         {"error", "Master could not publish the job: " + st.error().message}});
  }
  ctx.counters->publishes++;
  spdlog::info("user {} published {} to {} minions with jid {}", user,
               fun->str() ? *fun->str() : fun->ToJson(), resolved->minions.size(), jid);
  return wire::Value::MapOf({{"jid", jid},
                             {"minions", StrList(resolved->minions)},
                             {"missing", StrList(resolved->missing)}});
}

}  // namespace halite::master
