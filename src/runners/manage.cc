// manage.*: Salt's manage runner. status/up/down/versions publish to the minions through the
// master, as Salt's do. Presence (present, joined, alived, allowed, reaped, list_state and
// their not_ forms) asks the master which minions it sees (`_halite_presence`: the master's
// presence, docs/cli.md "Presence"), the same set salt/presence events report; the not_
// forms are the accepted keys (read here, from the pki dir) it does not see.
#include <algorithm>
#include <charconv>

#include "halite/stores/stores.h"
#include "halite/wire/keyed_map.h"
#include "internal.h"

namespace halite::runners {

namespace {

using wire::Value;

// The Salt release whose behaviour halite-master follows: manage.versions' "Master".
constexpr const char* kMasterSaltVersion = "3007.8";

Result<RunnerResult> PingStatus(RunnerEnv& env, const BoundArgs& a, const std::string& part) {
  const Value& tgt = a.Get("tgt");
  const std::string tgt_type = a.Text("tgt_type");
  std::chrono::seconds saved = env.timeout;
  if (auto t = a.Get("timeout").int64(); t && *t > 0) env.timeout = std::chrono::seconds(*t);
  auto gathered = internal::PublishAndWait(env, tgt, tgt_type, "test.ping");
  env.timeout = saved;
  if (!gathered.ok()) return gathered.error();
  std::vector<std::string> up;
  for (const auto& [id, r] : gathered->returns) up.push_back(id);
  Value down = internal::StrList(gathered->missing);
  if (part == "up") return RunnerResult{internal::StrList(up), ""};
  if (part == "down") return RunnerResult{down, ""};
  return RunnerResult{Value::MapOf({{"up", internal::StrList(up)}, {"down", down}}), ""};
}

// The minions the master sees, {id: ip} ("" when the master knows no address).
Result<Value> Present(RunnerEnv& env) {
  HALITE_ASSIGN_OR_RETURN(Value reply,
                          internal::AskMaster(env, Value::MapOf({{"cmd", "_halite_presence"}})));
  const Value* present = reply.Find("present");
  if (!present || !present->map()) return Error::Internal("bad presence reply: " + reply.ToJson());
  return *present;
}

bool InSubset(const Value& subset, const std::string& id) {
  if (subset.is_nil()) return true;
  for (const auto& s : internal::SplitInput(subset)) {
    if (s == id) return true;
  }
  return false;
}

Result<RunnerResult> ListState(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Value present, Present(env));
  const Value& subset = a.Get("subset");
  const bool show_ip = a.Truthy("show_ip");
  wire::KeyedMap ips;  // not Value::Set: 10,000 ids would each be compared with those before
  std::vector<std::string> ids;
  for (const auto& [k, ip] : *present.map()) {
    if (!k.str() || !InSubset(subset, *k.str())) continue;
    ids.push_back(*k.str());
    ips.Set(*k.str(), ip);
  }
  std::sort(ids.begin(), ids.end());
  return RunnerResult{show_ip ? Value(std::move(ips).Take()) : internal::StrList(ids), ""};
}

Result<RunnerResult> ListNotState(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Value present, Present(env));
  const config::MasterConfig& cfg = *env.config;
  auto store = stores::OpenMinionKeys(cfg);
  if (!store.ok()) return store.error();
  HALITE_ASSIGN_OR_RETURN(auto accepted, (*store)->List(keys::KeyState::kAccepted));
  std::sort(accepted.begin(), accepted.end());
  std::vector<std::string> out;
  for (const auto& id : accepted) {
    if (!present.Find(id) && InSubset(a.Get("subset"), id)) out.push_back(id);
  }
  return RunnerResult{internal::StrList(out), ""};
}

// Salt's SaltStackVersion order on the numbers of "3007.8", "3006.10rc1": the leading run of
// dot-separated numbers; text that starts with no number (halite-minion's "halite 0.1.0")
// counts as older than any release.
std::vector<std::int64_t> VersionNumbers(const std::string& text) {
  std::vector<std::int64_t> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    std::int64_t n = 0;
    auto [next, ec] = std::from_chars(p, end, n);
    if (ec != std::errc()) break;
    out.push_back(n);
    if (next >= end || *next != '.') break;
    p = next + 1;
  }
  return out;
}

Result<RunnerResult> Versions(RunnerEnv& env, const BoundArgs&) {
  HALITE_ASSIGN_OR_RETURN(auto gathered,
                          internal::PublishAndWait(env, "*", "glob", "test.version"));
  static const std::map<int, const char*> kLabels = {{-2, "Minion offline"},
                                                     {-1, "Minion requires update"},
                                                     {0, "Up to date"},
                                                     {1, "Minion newer than master"}};
  const auto master = VersionNumbers(kMasterSaltVersion);
  std::map<int, std::map<std::string, Value>> by_status;
  for (const auto& [id, r] : gathered.returns) {
    if ((r.retcode && *r.retcode != 0) || !r.ret.Truthy()) {
      by_status[-2][id] = false;
      continue;
    }
    const std::string text = r.ret.str() ? *r.ret.str() : r.ret.ToJson();
    const auto mine = VersionNumbers(text);
    by_status[mine < master ? -1 : (mine == master ? 0 : 1)][id] = text;
  }
  // Salt lists a targeted minion that did not answer as offline, with False.
  for (const auto& id : gathered.missing) by_status[-2][id] = false;
  // Salt lists the statuses in the order they were first met; here in the labels' order.
  Value out = Value::EmptyMap();
  for (const auto& [status, minions] : by_status) {
    wire::Map m;  // the ids of a std::map: distinct and sorted, so appended as they come
    for (const auto& [id, v] : minions) m.emplace_back(Value(id), v);
    out.Set(kLabels.at(status), Value(std::move(m)));
  }
  out.Set("Master", kMasterSaltVersion);
  return RunnerResult{std::move(out), ""};
}

const Value kNone;
const std::vector<Param> kPresenceParams = {{"subset", kNone}, {"show_ip", false}};

constexpr const char* kPresentDoc = R"(
    The minions the master sees now (see docs/cli.md, "Presence"), sorted; show_ip=True
    maps each to the address it connects from. subset: only these ids. Nothing is sent to
    the minions.

    CLI Example:

        halite-run manage.present
    )";
constexpr const char* kNotPresentDoc = R"(
    The accepted minions the master does not see now (see docs/cli.md, "Presence").
    subset: only these ids. Nothing is sent to the minions.

    CLI Example:

        halite-run manage.not_present
    )";

}  // namespace

void AddManageRunners(RunnerTable& table) {
  const std::vector<Param> ping_params = {
      {"tgt", "*"}, {"tgt_type", "glob"}, {"timeout", kNone}, {"gather_job_timeout", kNone}};
  table.Add({"manage.status", ping_params, false,
             R"(
    test.ping the targeted minions (every accepted one by default): "up" lists those that
    answered within the timeout, "down" the others.

    CLI Example:

        halite-run manage.status
        halite-run manage.status tgt='web*' timeout=10
    )",
             [](RunnerEnv& env, const BoundArgs& a) { return PingStatus(env, a, "status"); }});
  table.Add({"manage.up", ping_params, false,
             R"(
    The targeted minions that answer test.ping, as a list.

    CLI Example:

        halite-run manage.up
    )",
             [](RunnerEnv& env, const BoundArgs& a) { return PingStatus(env, a, "up"); }});
  std::vector<Param> down_params = ping_params;
  down_params.insert(down_params.begin(), Param{"removekeys", false});
  table.Add({"manage.down", down_params, false,
             R"(
    The targeted minions that do not answer test.ping, as a list. (removekeys=True is not
    supported: delete keys with halite-key -d.)

    CLI Example:

        halite-run manage.down
    )",
             [](RunnerEnv& env, const BoundArgs& a) -> Result<RunnerResult> {
               if (a.Truthy("removekeys")) {
                 return Error::InvalidArgument(
                     "removekeys=True is not supported: delete the keys with halite-key -d");
               }
               return PingStatus(env, a, "down");
             }});
  table.Add({"manage.versions",
             {},
             false,
             R"(
    test.version every minion and compare with the Salt release the master follows
    (3007.8): "Up to date", "Minion requires update", "Minion newer than master",
    "Minion offline" (an error instead of a version), and "Master".

    CLI Example:

        halite-run manage.versions
    )",
             Versions});
  for (const char* name : {"list_state", "present", "joined", "allowed", "alived", "reaped"}) {
    table.Add({std::string("manage.") + name, kPresenceParams, false, kPresentDoc, ListState});
  }
  for (const char* name :
       {"list_not_state", "not_present", "not_joined", "not_allowed", "not_alived", "not_reaped"}) {
    table.Add(
        {std::string("manage.") + name, kPresenceParams, false, kNotPresentDoc, ListNotState});
  }
}

}  // namespace halite::runners
