// Salt's merge_tops (src/pillar/roots.h).
#include <algorithm>

#include "roots.h"

namespace halite::pillar {

// merge_tops: {saltenv: {target: [match dicts..., sls...]}}, targets sorted by `order`.
wire::Value MergeTops(const Tops& tops, std::vector<std::string>& top_errors,
                      std::map<std::string, std::set<std::string>>& ignored) {
  struct Target {
    std::string name;
    wire::Array data;
    long long order = 0;
  };
  std::vector<std::pair<std::string, std::vector<Target>>> merged;
  auto env_slot = [&](const std::string& env) -> std::vector<Target>& {
    for (auto& [e, t] : merged) {
      if (e == env) return t;
    }
    merged.emplace_back(env, std::vector<Target>{});
    return merged.back().second;
  };
  for (const auto& [_, list] : tops) {
    for (const auto& ctop : list) {
      if (!ctop.is_map()) {
        if (!ctop.is_nil()) {
          top_errors.push_back("Error encountered while rendering pillar top file.");
          return wire::Value::EmptyMap();
        }
        continue;
      }
      for (const auto& [envk, targets] : *ctop.map()) {
        const std::string env = ToText(envk);
        if (env == "include") continue;
        if (!targets.is_map()) {
          top_errors.push_back("Error encountered while rendering pillar top file.");
          return wire::Value::EmptyMap();
        }
        auto& slot = env_slot(env);
        for (const auto& [tgtk, comps] : *targets.map()) {
          Target t;
          t.name = ToText(tgtk);
          wire::Array matches;
          std::vector<std::string> states;
          bool ignore_missing = false;
          if (const wire::Array* items = comps.array()) {
            for (const auto& comp : *items) {
              if (comp.is_map()) {
                if (comp.Find("match")) matches.push_back(comp);
                if (const wire::Value* o = comp.Find("order")) {
                  if (auto i = o->int64()) {
                    t.order = *i;
                  } else if (const std::string* os = o->str()) {
                    try {
                      t.order = std::stoll(*os);
                    } catch (...) {
                      t.order = 0;
                    }
                  }
                }
                if (const wire::Value* im = comp.Find("ignore_missing"); im && im->Truthy()) {
                  ignore_missing = true;
                }
              } else if (const std::string* sls = comp.str()) {
                if (std::find(states.begin(), states.end(), *sls) == states.end())
                  states.push_back(*sls);
              }
            }
          } else if (!comps.is_nil()) {
            top_errors.push_back("Error encountered while rendering pillar top file.");
            return wire::Value::EmptyMap();
          }
          if (ignore_missing) {
            for (const auto& st : states) ignored[env].insert(st);
          }
          t.data = std::move(matches);
          for (auto& st : states) t.data.emplace_back(st);
          auto existing =
              std::find_if(slot.begin(), slot.end(), [&](auto& x) { return x.name == t.name; });
          if (existing != slot.end()) {
            *existing = std::move(t);
          } else {
            slot.push_back(std::move(t));
          }
        }
      }
    }
  }
  wire::Value out = wire::Value::EmptyMap();
  for (auto& [env, targets] : merged) {
    std::stable_sort(targets.begin(), targets.end(),
                     [](const Target& a, const Target& b) { return a.order < b.order; });
    wire::Value m = wire::Value::EmptyMap();
    for (auto& t : targets)
      m.map()->emplace_back(wire::Value(t.name), wire::Value(std::move(t.data)));
    out.Set(env, std::move(m));
  }
  return out;
}

}  // namespace halite::pillar
