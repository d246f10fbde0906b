#include "halite/master/targeting.h"

#include <algorithm>

#include "halite/wire/target.h"

namespace halite::master {

Result<Resolved> ResolveTargets(MasterContext& ctx, const wire::Value& tgt,
                                const std::string& tgt_type, const std::string& delimiter) {
  HALITE_ASSIGN_OR_RETURN(std::vector<std::string> accepted,
                          ctx.key_store->List(keys::KeyState::kAccepted));
  Resolved out;
  bool needs_grains = tgt_type == "grain" || tgt_type == "grain_pcre" || tgt_type == "compound";
  for (const auto& id : accepted) {
    std::optional<wire::Value> grains;
    if (needs_grains) grains = ctx.minion_data->Grains(id);
    wire::TargetContext tc{id, grains ? &*grains : nullptr, true, delimiter};
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

}  // namespace halite::master
