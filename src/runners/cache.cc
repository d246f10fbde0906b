// cache.*: Salt's cache runner over the minion data cache (<cachedir>/minions/<id>/data.p and
// mine.p, or PostgreSQL with `cache: postgres`). halite-run reads and clears it itself, as
// salt-run does, since it runs on a master with the master's config (in a cluster the cachedir
// is the shared folder, or every master uses the same database): no master needs to be up. Targets
// resolve as the master resolves them (accepted keys, cached grains and pillar, nodegroups).
#include "halite/master/context.h"
#include "halite/master/minion_data.h"
#include "halite/master/targeting.h"
#include "halite/stores/stores.h"
#include "halite/wire/keyed_map.h"
#include "internal.h"

namespace halite::runners {

namespace {

using wire::Value;

// The accepted minions `tgt` matches, with the data cache they were matched against.
struct Targeted {
  std::unique_ptr<keys::KeyStore> keys;
  std::unique_ptr<master::MinionData> data;
  std::vector<std::string> minions;
};

Result<Targeted> Resolve(RunnerEnv& env, const BoundArgs& a) {
  const config::MasterConfig& cfg = *env.config;
  Targeted t;
  HALITE_ASSIGN_OR_RETURN(t.keys, stores::OpenMinionKeys(cfg));
  HALITE_ASSIGN_OR_RETURN(t.data, stores::OpenMinionData(cfg, /*feed=*/false));
  master::MasterContext ctx;
  ctx.config.Set(std::make_shared<const config::MasterConfig>(cfg));
  ctx.key_store = t.keys.get();
  ctx.minion_data = t.data.get();
  const Value& tgt = a.Get("tgt");
  HALITE_ASSIGN_OR_RETURN(auto resolved,
                          master::ResolveTargets(ctx, tgt.is_nil() ? Value("*") : tgt,
                                                 a.Text("tgt_type"), ":", /*greedy=*/false));
  t.minions = std::move(resolved.minions);
  return t;
}

Result<RunnerResult> Grains(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Targeted t, Resolve(env, a));
  // Keyed maps here and below: Value::Set over 10,000 minions compares each id with those
  // before it (50 million comparisons).
  wire::KeyedMap out;
  for (const auto& id : t.minions) {
    if (auto grains = t.data->Grains(id)) {
      out.Set(id, std::move(*grains));
    } else if (t.data->Pillar(id)) {
      out.Set(id, Value::EmptyMap());  // cached data without grains (cache.clear_grains)
    }
  }
  return RunnerResult{Value(std::move(out).Take()), ""};
}

Result<RunnerResult> Pillar(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Targeted t, Resolve(env, a));
  wire::KeyedMap out;
  for (const auto& id : t.minions) {
    if (auto pillar = t.data->Pillar(id)) out.Set(id, std::move(*pillar));
  }
  return RunnerResult{Value(std::move(out).Take()), ""};
}

Result<RunnerResult> Mine(RunnerEnv& env, const BoundArgs& a) {
  HALITE_ASSIGN_OR_RETURN(Targeted t, Resolve(env, a));
  wire::KeyedMap out;
  for (const auto& id : t.minions) {
    if (t.data->HasMine(id)) out.Set(id, t.data->Mine(id));
  }
  return RunnerResult{Value(std::move(out).Take()), ""};
}

// Salt's clear_cached_minion_data: False without a target, else True once the targeted
// minions' grains / pillar / mine are gone (data.p keeps what was not cleared).
Result<RunnerResult> Clear(RunnerEnv& env, const BoundArgs& a, bool grains, bool pillar,
                           bool mine) {
  if (a.Get("tgt").is_nil()) return RunnerResult{false, ""};
  HALITE_ASSIGN_OR_RETURN(Targeted t, Resolve(env, a));
  for (const auto& id : t.minions) {
    if (mine) HALITE_RETURN_IF_ERROR(t.data->FlushMine(id));
    if (!grains && !pillar) continue;
    // Both: the data goes, readable or not (a corrupt data.p included).
    if (grains && pillar) {
      HALITE_RETURN_IF_ERROR(t.data->ClearData(id));
      continue;
    }
    if (!t.data->Pillar(id)) continue;  // no data cached: nothing to keep
    std::optional<Value> kept_grains = grains ? std::nullopt : t.data->Grains(id);
    std::optional<Value> kept_pillar = pillar ? std::nullopt : t.data->Pillar(id);
    HALITE_RETURN_IF_ERROR(t.data->Store(id, kept_grains ? *kept_grains : Value(),
                                         kept_pillar ? *kept_pillar : Value()));
  }
  return RunnerResult{true, ""};
}

const Value kNone;

std::string ClearDoc(const std::string& what) {
  return "\n    Clear the cached " + what +
         " of the targeted minions; True when done, False without a\n    target.\n\n"
         "    CLI Example:\n\n        halite-run cache.clear_" +
         (what == "pillar, grains and mine data" ? std::string("all")
                                                 : what.substr(0, what.find(' '))) +
         " tgt='web*'\n    ";
}

}  // namespace

void AddCacheRunners(RunnerTable& table) {
  table.Add({"cache.grains",
             {{"tgt", std::nullopt}, {"tgt_type", "glob"}},
             true,
             R"(
    The cached grains of the targeted minions (those with grains in the minion data cache).

    CLI Example:

        halite-run cache.grains tgt='*'
    )",
             Grains});
  table.Add({"cache.pillar",
             {{"tgt", kNone}, {"tgt_type", "glob"}},
             true,
             R"(
    The cached pillar of the targeted minions (every minion by default).

    CLI Example:

        halite-run cache.pillar
        halite-run cache.pillar tgt='G@os:Debian' tgt_type=compound
    )",
             Pillar});
  table.Add({"cache.mine",
             {{"tgt", kNone}, {"tgt_type", "glob"}},
             true,
             R"(
    The cached mine data of the targeted minions (every minion by default).

    CLI Example:

        halite-run cache.mine
    )",
             Mine});
  const std::vector<Param> clear_params = {{"tgt", kNone}, {"tgt_type", "glob"}};
  table.Add({"cache.clear_grains", clear_params, false, ClearDoc("grains data"),
             [](RunnerEnv& env, const BoundArgs& a) { return Clear(env, a, true, false, false); }});
  table.Add({"cache.clear_pillar", clear_params, false, ClearDoc("pillar data"),
             [](RunnerEnv& env, const BoundArgs& a) { return Clear(env, a, false, true, false); }});
  table.Add({"cache.clear_mine", clear_params, false, ClearDoc("mine data"),
             [](RunnerEnv& env, const BoundArgs& a) { return Clear(env, a, false, false, true); }});
  table.Add({"cache.clear_all", clear_params, false, ClearDoc("pillar, grains and mine data"),
             [](RunnerEnv& env, const BoundArgs& a) { return Clear(env, a, true, true, true); }});
}

}  // namespace halite::runners
