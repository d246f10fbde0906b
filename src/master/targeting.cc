#include "halite/master/targeting.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "halite/master/peer.h"
#include "halite/wire/target.h"

namespace halite::master {

namespace {

bool IsDataTarget(const std::string& tgt_type, const std::string* expr, const char* prefixes,
                  std::initializer_list<std::string_view> types) {
  for (std::string_view t : types) {
    if (tgt_type == t) return true;
  }
  if ((tgt_type != "compound" && tgt_type != "compound_pillar_exact") || expr == nullptr) {
    return false;
  }
  // A term "X@..." or "X<delim>@..." at the start or after a space or parenthesis.
  for (std::size_t at = expr->find('@'); at != std::string::npos; at = expr->find('@', at + 1)) {
    for (std::size_t back : {1, 2}) {
      if (at < back) continue;
      const std::size_t start = at - back;
      if (std::strchr(prefixes, (*expr)[start]) == nullptr) continue;
      if (start == 0 || std::strchr(" (", (*expr)[start - 1]) != nullptr) return true;
    }
  }
  return false;
}

// A target ready to be matched minion by minion: nodegroups expanded once, and which of a
// minion's cached data it reads.
struct PreparedTarget {
  std::shared_ptr<const config::MasterConfig> config;  // keeps `nodegroups` alive
  const wire::Nodegroups* nodegroups = nullptr;
  wire::Value expr;
  std::string type;
  bool needs_grains = false;
  bool needs_pillar = false;
};

Result<PreparedTarget> Prepare(MasterContext& ctx, const wire::Value& tgt,
                               const std::string& tgt_type) {
  PreparedTarget t;
  t.config = ctx.config.Get();
  t.nodegroups = t.config != nullptr ? &t.config->nodegroups : nullptr;
  t.expr = tgt;
  t.type = tgt_type;
  if (const std::string* text = tgt.str();
      text != nullptr && t.nodegroups != nullptr &&
      (t.type == "nodegroup" || ((t.type == "compound" || t.type == "compound_pillar_exact") &&
                                 text->find("N@") != std::string::npos))) {
    HALITE_ASSIGN_OR_RETURN(std::string expanded,
                            t.type == "nodegroup"
                                ? wire::ExpandNodegroup(*text, *t.nodegroups)
                                : wire::ExpandCompoundNodegroups(*text, *t.nodegroups));
    t.expr = wire::Value(std::move(expanded));
    if (t.type == "nodegroup") t.type = "compound";
  }
  const std::string* text = t.expr.str();
  t.needs_grains = IsDataTarget(t.type, text, "GPS", {"grain", "grain_pcre", "ipcidr"});
  t.needs_pillar = IsDataTarget(t.type, text, "IJ", {"pillar", "pillar_pcre", "pillar_exact"});
  return t;
}

Result<bool> MatchOne(MasterContext& ctx, const PreparedTarget& t, const std::string& id,
                      const std::string& delimiter, bool greedy, const CpuBudget& budget) {
  std::optional<wire::Value> grains;
  std::optional<wire::Value> pillar;
  if (t.needs_grains) grains = ctx.minion_data->Grains(id);
  if (t.needs_pillar) pillar = ctx.minion_data->Pillar(id);
  wire::TargetContext tc{id,        grains ? &*grains : nullptr, greedy,
                         delimiter, pillar ? &*pillar : nullptr, t.nodegroups,
                         &budget};
  return wire::MatchTarget(t.expr, t.type, tc);
}

}  // namespace

Result<Resolved> ResolveTargets(MasterContext& ctx, const wire::Value& tgt,
                                const std::string& tgt_type, const std::string& delimiter,
                                bool greedy) {
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> accepted,
                          ctx.key_store->List(keys::KeyState::kAccepted));
  HALITE_ASSIGN_OR_RETURN(PreparedTarget prepared, Prepare(ctx, tgt, tgt_type));
  Resolved out;
  const CpuBudget budget(kResolveCpuBase + kResolveCpuPerMinion * accepted.size());
  const std::string what = "resolving a " + prepared.type + " target against " +
                           std::to_string(accepted.size()) + " minions";
  for (const auto& id : accepted) {
    HALITE_RETURN_IF_ERROR(budget.Check(what));
    HALITE_ASSIGN_OR_RETURN(bool matched, MatchOne(ctx, prepared, id, delimiter, greedy, budget));
    if (matched) out.minions.push_back(id);
  }
  if (tgt_type == "list") {
    std::vector<std::string> wanted = wire::TargetListItems(tgt);
    for (const auto& w : wanted) {
      if (!std::binary_search(accepted.begin(), accepted.end(), w)) out.missing.push_back(w);
    }
  }
  return out;
}

Result<bool> TargetIncludes(MasterContext& ctx, const wire::Value& tgt, const std::string& tgt_type,
                            const std::string& id, const std::string& delimiter, bool greedy) {
  auto stamp = ctx.key_store->Stamp(keys::KeyState::kAccepted, id);
  if (!stamp.ok()) {
    if (stamp.error().code == ErrorCode::kNotFound) return false;
    return std::move(stamp).error();
  }
  HALITE_ASSIGN_OR_RETURN(PreparedTarget prepared, Prepare(ctx, tgt, tgt_type));
  const CpuBudget budget(kResolveCpuBase);
  return MatchOne(ctx, prepared, id, delimiter, greedy, budget);
}

namespace {

// What RecentJobs keeps of a job: what ReturnBelongsToJob and pub_ret read.
std::shared_ptr<const jobs::Job> Slim(jobs::Job job) {
  wire::Value load = wire::Value::EmptyMap();
  for (const char* key : {"tgt", "tgt_type", kPeerRequesterKey}) {
    if (const wire::Value* v = job.load.Find(key)) load.Set(key, *v);
  }
  job.load = std::move(load);
  return std::make_shared<const jobs::Job>(std::move(job));
}

}  // namespace

Result<std::shared_ptr<const jobs::Job>> RecentJobs::Load(jobs::JobCache& cache,
                                                          std::string_view jid) {
  {
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if ((*it)->jid == jid) {
        lru_.splice(lru_.begin(), lru_, it);
        return lru_.front();
      }
    }
  }
  HALITE_ASSIGN_OR_RETURN(jobs::Job job, cache.LoadJob(jid));
  auto shared = Slim(std::move(job));
  std::lock_guard lock(mu_);
  lru_.push_front(shared);
  if (lru_.size() > capacity_) lru_.pop_back();
  return shared;
}

void RecentJobs::Remember(jobs::Job job) {
  auto shared = Slim(std::move(job));
  std::lock_guard lock(mu_);
  lru_.push_front(std::move(shared));
  if (lru_.size() > capacity_) lru_.pop_back();
}

bool ReturnBelongsToJob(const jobs::Job& job, const std::string& id) {
  if (std::binary_search(job.minions.begin(), job.minions.end(), id)) return true;
  const wire::Value* tgt = job.load.Find("tgt");
  const std::string* type = job.load.FindStr("tgt_type");
  const std::string tgt_type = type ? *type : "glob";
  if (!tgt) return true;  // a job saved without a target (minion-initiated): its own
  if (tgt_type != "glob" && tgt_type != "pcre" && tgt_type != "list") return true;
  wire::TargetContext tc{id, nullptr, true, ":"};
  auto matched = wire::MatchTarget(*tgt, tgt_type, tc);
  return matched.ok() && *matched;
}

}  // namespace halite::master
