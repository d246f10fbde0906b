#include "halite/master/targeting.h"

#include <algorithm>

#include "halite/wire/target.h"

namespace halite::master {

Result<Resolved> ResolveTargets(MasterContext& ctx, const wire::Value& tgt,
                                const std::string& tgt_type, const std::string& delimiter,
                                bool greedy) {
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> accepted,
                          ctx.key_store->List(keys::KeyState::kAccepted));
  Resolved out;
  bool needs_grains = tgt_type == "grain" || tgt_type == "grain_pcre" || tgt_type == "compound";
  for (const auto& id : accepted) {
    std::optional<wire::Value> grains;
    if (needs_grains) grains = ctx.minion_data->Grains(id);
    wire::TargetContext tc{id, grains ? &*grains : nullptr, greedy, delimiter};
    HALITE_ASSIGN_OR_RETURN(bool matched, wire::MatchTarget(tgt, tgt_type, tc));
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
  auto shared = std::make_shared<const jobs::Job>(std::move(job));
  std::lock_guard lock(mu_);
  lru_.push_front(shared);
  if (lru_.size() > capacity_) lru_.pop_back();
  return shared;
}

void RecentJobs::Remember(jobs::Job job) {
  auto shared = std::make_shared<const jobs::Job>(std::move(job));
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
