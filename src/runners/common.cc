#include <algorithm>

#include "halite/jobs/jid.h"
#include "internal.h"

namespace halite::runners::internal {

Result<Gathered> PublishAndWait(RunnerEnv& env, const wire::Value& tgt, const std::string& tgt_type,
                                const std::string& fun, wire::Array arg) {
  HALITE_ASSIGN_OR_RETURN(client::LocalClient * master, env.master());
  HALITE_RETURN_IF_ERROR(master->SubscribeEvents());
  client::PublishRequest request;
  request.tgt = tgt;
  request.tgt_type = tgt_type;
  request.fun = fun;
  request.arg = std::move(arg);
  Gathered out;
  auto job = master->Publish(request);
  if (!job.ok()) {
    if (job.error().code == ErrorCode::kNotFound) return out;  // no minion matched
    return job.error();
  }
  client::WaitOptions wait;
  wait.timeout = env.timeout;
  wait.find_job = false;
  HALITE_ASSIGN_OR_RETURN(
      out.missing, master->WaitForReturns(
                       *job, wait, [&](const client::MinionReturn& r) { out.returns[r.id] = r; }));
  std::sort(out.missing.begin(), out.missing.end());
  out.targeted = job->minions;
  std::sort(out.targeted.begin(), out.targeted.end());
  return out;
}

Result<wire::Value> AskMaster(RunnerEnv& env, wire::Value load) {
  HALITE_ASSIGN_OR_RETURN(client::LocalClient * master, env.master());
  return master->Call(std::move(load));
}

std::vector<std::string> SplitInput(const wire::Value& v) {
  std::vector<std::string> out;
  auto add = [&out](std::string s) {
    auto b = s.find_first_not_of(" \t");
    auto e = s.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : s.substr(b, e - b + 1));
  };
  if (const wire::Array* a = v.array()) {
    for (const auto& e : *a) add(e.str() ? *e.str() : e.ToJson());
    return out;
  }
  if (v.is_nil()) return out;
  const std::string text = v.str() ? *v.str() : v.ToJson();
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t comma = std::min(text.find(',', start), text.size());
    add(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

wire::Value StrList(const std::vector<std::string>& items) {
  wire::Array a;
  a.reserve(items.size());
  for (const auto& s : items) a.emplace_back(s);
  return wire::Value(std::move(a));
}

wire::Value FormatJidInstance(const std::string& jid, const wire::Value& load,
                              const wire::Value* minions) {
  wire::Value out = wire::Value::EmptyMap();
  if (!load.is_map() || load.map()->empty()) {
    out.Set("Error", "Cannot contact returner or no job with this jid");
    out.Set("StartTime", jobs::JidToStartTime(jid));
    return out;
  }
  auto get = [&](const char* key, wire::Value fallback) {
    const wire::Value* v = load.Find(key);
    return v ? *v : fallback;
  };
  out.Set("Function", get("fun", "unknown-function"));
  const wire::Value* arg = load.Find("arg");
  out.Set("Arguments", arg && arg->is_array() ? *arg : wire::Value::EmptyArray());
  out.Set("Target", get("tgt", "unknown-target"));
  out.Set("Target-type", get("tgt_type", "list"));
  out.Set("User", get("user", "root"));
  if (const wire::Value* md = load.Find("metadata")) {
    out.Set("Metadata", *md);
  } else if (const wire::Value* kw = load.Find("kwargs"); kw && kw->Find("metadata")) {
    out.Set("Metadata", *kw->Find("metadata"));
  }
  if (minions && minions->array() && !minions->array()->empty()) out.Set("Minions", *minions);
  out.Set("StartTime", jobs::JidToStartTime(jid));
  return out;
}

}  // namespace halite::runners::internal
