// jobs.*: Salt's jobs runner over halite's job cache. The job cache belongs to the master (its
// backend may be PostgreSQL, with the connection settings only the master holds), so these
// ask the master over its request socket (`_halite_lookup_jid`, `_halite_list_jobs`);
// jobs.active publishes saltutil.running, as Salt's does.
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "halite/jobs/jid.h"
#include "halite/wire/glob.h"
#include "halite/wire/keyed_map.h"
#include "internal.h"

namespace halite::runners {

namespace {

using internal::FormatJidInstance;
using wire::Value;

// The job's load, expected minions and returns; an unknown jid is an empty load.
Result<Value> LoadJob(RunnerEnv& env, const std::string& jid) {
  return internal::AskMaster(
      env, Value::MapOf({{"cmd", "_halite_lookup_jid"}, {"jid", jid}, {"missing_ok", true}}));
}

std::string Backend(const RunnerEnv& env) {
  return env.config->master_job_cache == "local_fs" ? "local_cache" : env.config->master_job_cache;
}

Result<Value> ListJob(RunnerEnv& env, const std::string& jid, bool progress) {
  if (progress && env.progress) env.progress("Querying returner: " + Backend(env));
  HALITE_ASSIGN_OR_RETURN(Value stored, LoadJob(env, jid));
  Value out = Value::MapOf({{"jid", jid}});
  const Value* job = stored.Find("job");
  Value info = FormatJidInstance(jid, job ? *job : Value::EmptyMap(), stored.Find("minions"));
  for (auto& [k, v] : *info.map()) out.Set(*k.str(), v);
  const Value* returns = stored.Find("returns");
  out.Set("Result", returns && returns->is_map() ? *returns : Value::EmptyMap());
  return out;
}

const wire::Map& ResultOf(const Value& job) {
  static const wire::Map kEmpty;
  const Value* r = job.Find("Result");
  return r && r->map() ? *r->map() : kEmpty;
}

// Each returned minion's id to its return, pointing into `returns` (no copy of the returns).
std::unordered_map<std::string_view, const Value*> ReturnsById(const wire::Map& returns) {
  std::unordered_map<std::string_view, const Value*> by_id;
  by_id.reserve(returns.size());
  for (const auto& [id, r] : returns) {
    if (id.str()) by_id.try_emplace(*id.str(), &r);
  }
  return by_id;
}

Result<RunnerResult> LookupJid(RunnerEnv& env, const BoundArgs& a) {
  const std::string jid = a.Text("jid");
  const bool progress = a.Truthy("display_progress");
  HALITE_ASSIGN_OR_RETURN(Value job, ListJob(env, jid, progress));
  // Keyed maps here and in ExitSuccess: a job of 10,000 minions looked each one up in the
  // returns and in the answer so far with Value::Find (50 million comparisons apiece).
  wire::KeyedMap out;
  const wire::Map& returns = ResultOf(job);
  const auto returned = ReturnsById(returns);
  for (const auto& [id, r] : returns) {
    if (progress && env.progress) env.progress(*id.str());
    if (a.Truthy("returned")) {
      const Value* ret = r.Find("return");
      out.Set(*id.str(), ret ? *ret : Value());
    }
  }
  if (a.Truthy("missing")) {
    if (const Value* minions = job.Find("Minions"); minions && minions->array()) {
      for (const Value& m : *minions->array()) {
        if (m.str() && !returned.contains(*m.str())) out.Set(*m.str(), "Minion did not return");
      }
    }
  }
  RunnerResult result{Value(std::move(out).Take()), ""};
  // The first return's outputter (a highstate job's), as Salt's lookup_jid hands it on.
  if (!returns.empty()) {
    if (const std::string* o = returns.front().second.FindStr("out")) result.outputter = *o;
  }
  return result;
}

Result<RunnerResult> ExitSuccess(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Value job, ListJob(env, a.Text("jid"), false));
  const wire::Map& returns = ResultOf(job);
  const auto result = ReturnsById(returns);
  wire::KeyedMap out;
  if (const Value* minions = job.Find("Minions"); minions && minions->array()) {
    for (const Value& m : *minions->array()) {
      if (!m.str()) continue;
      const auto r = result.find(*m.str());
      const Value* ret = r != result.end() ? r->second->Find("return") : nullptr;
      out.Set(*m.str(), ret != nullptr && ret->Truthy());
    }
  }
  for (const auto& [id, r] : returns) {
    const Value* ret = r.Find("return");
    if (ret && ret->Truthy() && id.str()) out.Set(*id.str(), true);
  }
  return RunnerResult{Value(std::move(out).Take()), ""};
}

// "YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]" (or 'T' for the space), or StartTime's own
// "YYYY, Mon DD HH:MM:SS.ffffff", as the 20 digits of a jid, for comparing with jids.
std::optional<std::string> TimeAsJidDigits(const std::string& text) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::string s = text;
  if (s.size() >= 11 && s[4] == ',' && s[5] == ' ') {
    for (int m = 0; m < 12; ++m) {
      if (s.compare(6, 3, kMonths[m]) == 0) {
        char mm[3];
        std::snprintf(mm, sizeof mm, "%02d", m + 1);
        s = s.substr(0, 4) + "-" + mm + "-" + s.substr(10);
        break;
      }
    }
  }
  std::string digits;
  const std::string shape = "dddd-dd-dd dd:dd:dd.dddddd";
  std::size_t i = 0;
  for (; i < s.size() && i < shape.size(); ++i) {
    char want = shape[i];
    char c = s[i];
    if (want == 'd') {
      if (c < '0' || c > '9') return std::nullopt;
      digits += c;
    } else if (want == ' ' ? (c != ' ' && c != 'T') : c != want) {
      return std::nullopt;
    }
  }
  if (i < s.size() ||
      (digits.size() != 8 && digits.size() != 12 && digits.size() != 14 && digits.size() < 15)) {
    return std::nullopt;
  }
  digits.resize(20, '0');
  return digits;
}

bool AnyGlobMatches(const Value& field, const std::vector<std::string>& globs) {
  std::vector<std::string> texts;
  if (const wire::Array* list = field.array()) {
    for (const Value& e : *list) texts.push_back(e.str() ? *e.str() : e.ToJson());
  } else {
    texts.push_back(field.str() ? *field.str() : field.ToJson());
  }
  for (const auto& t : texts) {
    for (const auto& g : globs) {
      if (wire::GlobMatch(g, t)) return true;
    }
  }
  return false;
}

Result<RunnerResult> ListJobs(RunnerEnv& env, const BoundArgs& a) {
  if (a.Truthy("search_metadata")) {
    return Error::InvalidArgument(
        "search_metadata is not supported: halite's job list holds no metadata");
  }
  std::optional<std::string> after, before;
  for (const char* which : {"start_time", "end_time"}) {
    if (!a.Truthy(which)) continue;
    auto digits = TimeAsJidDigits(a.Text(which));
    if (!digits) {
      return Error::InvalidArgument(std::string(which) + ": cannot read '" + a.Text(which) +
                                    "' as a time (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]])");
    }
    (std::string_view(which) == "start_time" ? after : before) = *digits;
  }
  if (a.Truthy("display_progress") && env.progress) {
    env.progress("Querying returner " + Backend(env) + " for jobs.");
  }
  HALITE_ASSIGN_OR_RETURN(Value listed,
                          internal::AskMaster(env, Value::MapOf({{"cmd", "_halite_list_jobs"}})));
  const Value* jobs = listed.Find("jobs");
  const auto functions = internal::SplitInput(a.Get("search_function"));
  const auto targets = internal::SplitInput(a.Get("search_target"));
  wire::KeyedMap out;  // a cache of thousands of jobs: not a search of those before each
  if (jobs && jobs->map()) {
    for (const auto& [jid, job] : *jobs->map()) {
      const std::string id = jid.str() ? *jid.str() : jid.ToJson();
      const Value* target = job.Find("Target");
      const Value* function = job.Find("Function");
      if (!targets.empty() && !(target && AnyGlobMatches(*target, targets))) continue;
      if (!functions.empty() && !(function && AnyGlobMatches(*function, functions))) continue;
      const std::string stamp = id.substr(0, 20);
      if (after && !(jobs::IsJid(id) && stamp >= *after)) continue;
      if (before && !(jobs::IsJid(id) && stamp <= *before)) continue;
      out.Set(id, job);
    }
  }
  return RunnerResult{Value(std::move(out).Take()), a.Text("outputter")};
}

Result<RunnerResult> Active(RunnerEnv& env, const BoundArgs& a) {
  const bool progress = a.Truthy("display_progress") && env.progress;
  HALITE_ASSIGN_OR_RETURN(auto gathered,
                          internal::PublishAndWait(env, "*", "glob", "saltutil.running"));
  if (progress) {
    std::string ids;
    for (const auto& [id, r] : gathered.returns) ids += (ids.empty() ? "'" : ", '") + id + "'";
    env.progress("Attempting to contact minions: [" + ids + "]");
  }
  // Keyed: a minion's reply is its own to make, and 300,000 jids in one made Value::Find
  // and Set (a linear search each) run for tens of minutes.
  wire::KeyedMap by_jid;
  for (const auto& [minion, r] : gathered.returns) {
    if (progress) env.progress("Received reply from minion " + minion);
    const wire::Array* running = r.ret.array();
    if (!running) continue;
    for (const Value& job : *running) {
      const std::string* jid = job.FindStr("jid");
      if (!jid) continue;
      const Value* pid = job.Find("pid");
      Value entry = Value::MapOf({{minion, pid ? *pid : Value()}});
      if (Value* seen = by_jid.Find(*jid)) {
        seen->Find("Running")->array()->push_back(std::move(entry));
        continue;
      }
      Value info = FormatJidInstance(*jid, job, nullptr);
      info.Set("Running", Value(wire::Array{std::move(entry)}));
      info.Set("Returned", Value::EmptyArray());
      by_jid.Set(*jid, std::move(info));
    }
  }
  Value out(std::move(by_jid).Take());
  for (auto& [jid, info] : *out.map()) {
    HALITE_ASSIGN_OR_RETURN(Value stored, LoadJob(env, *jid.str()));
    const Value* returns = stored.Find("returns");
    if (!returns || !returns->map()) continue;
    for (const auto& [id, r] : *returns->map()) info.Find("Returned")->array()->push_back(id);
  }
  return RunnerResult{std::move(out), ""};
}

const Value kNone;

}  // namespace

void AddJobsRunners(RunnerTable& table) {
  table.Add({"jobs.active",
             {{"display_progress", false}},
             false,
             R"(
    The jobs the minions run right now, by jid: each job's function, arguments, target and
    user, which minions run it (with their process id) and which already returned. Publishes
    saltutil.running to every minion.

    CLI Example:

        halite-run jobs.active
    )",
             Active});
  table.Add({"jobs.list_job",
             {{"jid", std::nullopt}, {"ext_source", kNone}, {"display_progress", false}},
             false,
             R"(
    One job by its jid: its function, arguments, target, user, start time, the minions it
    targeted and every stored return ("Result").

    CLI Example:

        halite-run jobs.list_job 20130916125524463507
    )",
             [](RunnerEnv& env, const BoundArgs& a) -> Result<RunnerResult> {
               HALITE_ASSIGN_OR_RETURN(Value job,
                                       ListJob(env, a.Text("jid"), a.Truthy("display_progress")));
               return RunnerResult{std::move(job), ""};
             }});
  table.Add({"jobs.print_job",
             {{"jid", std::nullopt}, {"ext_source", kNone}},
             false,
             R"(
    One job by its jid, as jobs.list_job shows it, under its jid.

    CLI Example:

        halite-run jobs.print_job 20130916125524463507
    )",
             [](RunnerEnv& env, const BoundArgs& a) -> Result<RunnerResult> {
               const std::string jid = a.Text("jid");
               HALITE_ASSIGN_OR_RETURN(Value job, ListJob(env, jid, false));
               job.Erase("jid");
               return RunnerResult{Value::MapOf({{jid, std::move(job)}}), ""};
             }});
  table.Add({"jobs.lookup_jid",
             {{"jid", std::nullopt},
              {"ext_source", kNone},
              {"returned", true},
              {"missing", false},
              {"display_progress", false}},
             false,
             R"(
    The returns of a job, by minion. missing=True adds "Minion did not return" for each
    targeted minion without a return; returned=False leaves out those that returned. A job
    whose minions name an outputter (a highstate) prints with it unless --out says otherwise.

    CLI Example:

        halite-run jobs.lookup_jid 20130916125524463507
        halite-run jobs.lookup_jid 20130916125524463507 missing=True --out=json
    )",
             LookupJid});
  table.Add({"jobs.exit_success",
             {{"jid", std::nullopt}, {"ext_source", kNone}},
             false,
             R"(
    For each minion a job targeted: True when it returned a true value, else False.

    CLI Example:

        halite-run jobs.exit_success 20130916125524463507
    )",
             ExitSuccess});
  table.Add({"jobs.list_jobs",
             {{"ext_source", kNone},
              {"outputter", kNone},
              {"search_metadata", kNone},
              {"search_function", kNone},
              {"search_target", kNone},
              {"start_time", kNone},
              {"end_time", kNone},
              {"display_progress", false}},
             false,
             R"(
    Every job in the job cache. search_function and search_target take globs (a list, or
    comma-separated); start_time and end_time (YYYY-MM-DD[ HH:MM[:SS]], UTC) keep the jobs
    started at or after / at or before that time. Every filter given must match.

    CLI Example:

        halite-run jobs.list_jobs search_function='test.*' search_target='web*'
        halite-run jobs.list_jobs start_time='2025-01-01 00:00'
    )",
             ListJobs});
}

}  // namespace halite::runners
