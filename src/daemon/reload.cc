#include "halite/daemon/reload.h"

#include <functional>
#include <map>
#include <set>
#include <string_view>

namespace halite::daemon {
namespace {

using config::MasterConfig;

enum class Effect { kNone, kLogLevel, kAuth, kPillar };

struct LiveKey {
  Effect effect;
  // Copies the parsed value(s) of this key from `next` into `running`.
  std::function<void(MasterConfig& running, const MasterConfig& next)> take;
};

#define HALITE_TAKE(field) [](MasterConfig& r, const MasterConfig& n) { r.field = n.field; }

// Keys read through MasterContext::config on every request, or by the maintenance loop, or only
// by the CLIs (which read the file at each run), or by the pillar compiler (rebuilt whole).
// What is absent needs a restart: sockets, directories, worker and renderer pools, the job
// cache backend and its options, cluster membership, the replay and rate-limit tables.
const std::map<std::string, LiveKey, std::less<>>& Table() {
  static const auto* table = new std::map<std::string, LiveKey, std::less<>>{
      {"log_level", {Effect::kLogLevel, HALITE_TAKE(log_level)}},
      // Key acceptance.
      {"auto_accept", {Effect::kAuth, HALITE_TAKE(auto_accept)}},
      {"open_mode", {Effect::kAuth, HALITE_TAKE(open_mode)}},
      {"autosign_file", {Effect::kAuth, HALITE_TAKE(autosign_file)}},
      {"autoreject_file", {Effect::kAuth, HALITE_TAKE(autoreject_file)}},
      {"autosign_timeout", {Effect::kAuth, HALITE_TAKE(autosign_timeout)}},
      {"max_pending_keys", {Effect::kAuth, HALITE_TAKE(max_pending_keys)}},
      {"permissive_pki_access", {Effect::kAuth, HALITE_TAKE(permissive_pki_access)}},
      // Read per request.
      {"auth_events", {Effect::kNone, HALITE_TAKE(auth_events)}},
      {"max_minions", {Effect::kNone, HALITE_TAKE(max_minions)}},
      {"minion_data_cache", {Effect::kNone, HALITE_TAKE(minion_data_cache)}},
      {"mine_get",
       {Effect::kNone,
        [](MasterConfig& r, const MasterConfig& n) {
          r.has_mine_get = n.has_mine_get;
          r.mine_get = n.mine_get;
        }}},
      {"allow_unsigned_v2_requests", {Effect::kNone, HALITE_TAKE(allow_unsigned_v2_requests)}},
      {"minimum_request_version", {Effect::kNone, HALITE_TAKE(minimum_request_version)}},
      {"auth_queue_timeout_ms", {Effect::kNone, HALITE_TAKE(auth_queue_timeout_ms)}},
      {"auth_reply_cache_wait_ms", {Effect::kNone, HALITE_TAKE(auth_reply_cache_wait_ms)}},
      {"max_events_per_request", {Effect::kNone, HALITE_TAKE(max_events_per_request)}},
      {"max_event_size", {Effect::kNone, HALITE_TAKE(max_event_size)}},
      {"file_roots", {Effect::kNone, HALITE_TAKE(file_roots)}},
      // Both spellings set keep_jobs_seconds (keep_jobs is hours, used when the other is unset).
      {"keep_jobs", {Effect::kNone, HALITE_TAKE(keep_jobs_seconds)}},
      {"keep_jobs_seconds", {Effect::kNone, HALITE_TAKE(keep_jobs_seconds)}},
      // Read by halite / halite-run from the file at each run.
      {"timeout", {Effect::kNone, HALITE_TAKE(timeout)}},
      {"gather_job_timeout", {Effect::kNone, HALITE_TAKE(gather_job_timeout)}},
      // Targeting on the master and in pillar top files.
      {"nodegroups", {Effect::kPillar, HALITE_TAKE(nodegroups)}},
      // The pillar compiler's settings (the renderer pool's own ones need a restart).
      {"pillar_roots", {Effect::kPillar, HALITE_TAKE(pillar_roots)}},
      {"state_top", {Effect::kPillar, HALITE_TAKE(state_top)}},
      {"pillar_source_merging_strategy",
       {Effect::kPillar, HALITE_TAKE(pillar_source_merging_strategy)}},
      {"pillar_merge_lists", {Effect::kPillar, HALITE_TAKE(pillar_merge_lists)}},
      {"pillar_includes_override_sls",
       {Effect::kPillar, HALITE_TAKE(pillar_includes_override_sls)}},
      {"pillar_safe_render_error", {Effect::kPillar, HALITE_TAKE(pillar_safe_render_error)}},
      {"pillarenv", {Effect::kPillar, HALITE_TAKE(pillarenv)}},
      {"pillarenv_from_saltenv", {Effect::kPillar, HALITE_TAKE(pillarenv_from_saltenv)}},
      {"ext_pillar", {Effect::kPillar, HALITE_TAKE(ext_pillar)}},
      {"ext_pillar_first", {Effect::kPillar, HALITE_TAKE(ext_pillar_first)}},
  };
  return *table;
}

#undef HALITE_TAKE

// The keys of a config document's top-level map with their values as YAML text.
std::map<std::string, std::string> Entries(const YAML::Node& doc) {
  std::map<std::string, std::string> out;
  if (!doc || !doc.IsMap()) return out;
  for (const auto& kv : doc) {
    YAML::Emitter e;
    e << kv.second;
    out[kv.first.as<std::string>("")] = e.c_str();
  }
  return out;
}

}  // namespace

ReloadPlan PlanReload(const MasterConfig& running, const MasterConfig& next) {
  ReloadPlan plan;
  plan.effective = running;
  const auto before = Entries(running.source);
  const auto after = Entries(next.source);
  std::set<std::string> changed;
  for (const auto& [key, value] : before) {
    auto it = after.find(key);
    if (it == after.end() || it->second != value) changed.insert(key);
  }
  for (const auto& [key, value] : after) {
    if (!before.contains(key)) changed.insert(key);
  }
  // `include` and `default_include` only say where the keys come from; the keys they bring in
  // are compared themselves.
  changed.erase("include");
  changed.erase("default_include");

  YAML::Node source = running.source && running.source.IsMap() ? YAML::Clone(running.source)
                                                               : YAML::Node(YAML::NodeType::Map);
  for (const auto& key : changed) {
    auto live = Table().find(key);
    if (live == Table().end()) {
      plan.need_restart.push_back(key);
      continue;
    }
    live->second.take(plan.effective, next);
    plan.applied.push_back(key);
    switch (live->second.effect) {
      case Effect::kLogLevel:
        plan.log_level_changed = true;
        break;
      case Effect::kAuth:
        plan.auth_changed = true;
        break;
      case Effect::kPillar:
        plan.pillar_changed = true;
        break;
      case Effect::kNone:
        break;
    }
    if (next.source && next.source.IsMap() && next.source[key]) {
      source[key] = YAML::Clone(next.source[key]);
    } else {
      source.remove(key);
    }
  }
  plan.effective.source = source;
  return plan;
}

std::vector<std::string> LiveKeys() {
  std::vector<std::string> keys;
  for (const auto& [key, _] : Table()) keys.push_back(key);
  return keys;
}

}  // namespace halite::daemon
