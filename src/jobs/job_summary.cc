#include "halite/jobs/job_summary.h"

#include <string>

#include "halite/jobs/jid.h"

namespace halite::jobs {
namespace {

std::string StrOr(const wire::Value& load, std::string_view key, std::string_view fallback) {
  const std::string* value = load.FindStr(key);
  return value != nullptr ? *value : std::string(fallback);
}

// tgt is a string, or a list for tgt_type list, shown as saved (salt-run 3007.8 lists a list
// target as a list: tests/data/salt/salt_run/expected/06.json); anything else as JSON text.
wire::Value TargetValue(const wire::Value* tgt) {
  if (tgt == nullptr) return "unknown-target";
  if (tgt->is_str() || tgt->is_array()) return *tgt;
  return tgt->ToJson();
}

}  // namespace

JobSummary SummarizeJob(std::string_view jid, const wire::Value& load) {
  JobSummary summary;
  summary.jid = std::string(jid);
  const wire::Value* fun = load.Find("fun");
  summary.function =
      fun != nullptr && (fun->is_str() || fun->is_array()) ? *fun : wire::Value("unknown-function");
  const wire::Value* arg = load.Find("arg");
  summary.arguments = arg != nullptr && !arg->is_nil() ? *arg : wire::Value::EmptyArray();
  summary.target = TargetValue(load.Find("tgt"));
  summary.target_type = StrOr(load, "tgt_type", "list");
  summary.user = StrOr(load, "user", "root");
  summary.start_time = JidToStartTime(jid);
  return summary;
}

}  // namespace halite::jobs
