// The mine as a requester may read it (include/halite/master/mine.h).
#include "halite/master/mine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "halite/common/logging.h"
#include "halite/master/minion_data.h"
#include "halite/master/targeting.h"
#include "halite/wire/regex.h"

namespace halite::master {
namespace {

// re.match(pattern, text), as Salt's ACLs use it; a bad pattern matches nothing.
bool ReMatch(const std::string& pattern, const std::string& text) {
  return wire::ReMatchOrFalse(pattern, text);
}

// Salt's master-side `mine_get` ACL: the functions `requester` may read.
std::vector<std::string> MineFunctionsAllowed(MasterContext& ctx, const std::string& requester,
                                              std::vector<std::string> funs) {
  if (!ctx.config->has_mine_get) return funs;
  std::vector<std::string> perms;
  for (const auto& [id_pattern, allowed] : ctx.config->mine_get) {
    if (ReMatch(id_pattern, requester)) perms.insert(perms.end(), allowed.begin(), allowed.end());
  }
  std::erase_if(funs, [&](const std::string& f) {
    return std::none_of(perms.begin(), perms.end(),
                        [&](const std::string& p) { return ReMatch(p, f); });
  });
  if (funs.empty()) spdlog::info("mine_get from '{}': no function allowed by mine_get", requester);
  return funs;
}

// Whether the requester of one mine_get matches an allow_tgt, by (target, type): a fleet's
// entries share a few allow_tgt values, and each match reads the requester's key and data
// (from etcd, on a cluster that keeps keys there), so a mine_get over 10,000 minions asks
// once per distinct allow_tgt rather than once per entry.
using AllowedFor = std::map<std::pair<std::string, std::string>, bool>;

// A mine entry as `requester` may see it: the value itself, or, for an entry stored with
// Salt's minion-side ACL ({"__saltmine_acl__": 1, "__data__": v, "allow_tgt": ...}), its data
// when `requester` matches allow_tgt. nullptr: nothing to show.
const wire::Value* MineValueFor(MasterContext& ctx, const wire::Value* entry,
                                const std::string& requester, AllowedFor& allowed_for) {
  if (!entry || !entry->is_map() || !entry->Find("__saltmine_acl__")) return entry;
  if (const wire::Value* allow_tgt = entry->Find("allow_tgt"); allow_tgt && allow_tgt->Truthy()) {
    // Salt resolves allow_tgt over every minion and looks for the requester in the result;
    // matching the requester alone gives the same answer with one match instead of one per
    // accepted minion, for every entry of every minion a mine_get returns.
    const std::string* type = entry->FindStr("allow_tgt_type");
    auto key = std::make_pair(allow_tgt->ToJson(), type ? *type : std::string("glob"));
    auto known = allowed_for.find(key);
    if (known == allowed_for.end()) {
      auto allowed = TargetIncludes(ctx, *allow_tgt, key.second, requester);
      known = allowed_for.emplace(std::move(key), allowed.ok() && *allowed).first;
    }
    if (!known->second) return nullptr;
  }
  return entry->Find("__data__");
}

// What Salt's _mine_get resolves a requested target type as: pillar values compare exactly,
// so that a requester cannot learn pillar values it may not read by globbing over them and
// watching whose entries come back. Salt does this for "pillar" and "compound" (I@ and J@);
// halite also does it for "pillar_pcre", which Salt 3007 still resolves as a regex (the same
// oracle, a regex at a time). Its publish_validate treats both alike.
std::string MineTargetType(const std::string& tgt_type) {
  if (tgt_type == "pillar" || tgt_type == "pillar_pcre") return "pillar_exact";
  if (tgt_type == "compound") return "compound_pillar_exact";
  return tgt_type;
}

}  // namespace

wire::Value MineGet(MasterContext& ctx, const std::string& requester, const wire::Value& tgt,
                    const wire::Value& fun, const std::string& tgt_type) {
  wire::Value out = wire::Value::EmptyMap();
  // Salt: a string is split at commas into a set (so "a,a" is one function, "a," two); a list
  // is taken as it is and always answers by function.
  std::vector<std::string> funs;
  if (const std::string* f = fun.str()) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = std::min(f->find(',', start), f->size());
      funs.push_back(f->substr(start, comma - start));
      if (comma == f->size()) break;
      start = comma + 1;
    }
  } else if (const wire::Array* a = fun.array()) {
    for (const auto& v : *a) {
      if (const std::string* s = v.str()) funs.push_back(*s);
    }
  } else {
    return out;
  }
  std::sort(funs.begin(), funs.end());
  funs.erase(std::unique(funs.begin(), funs.end()), funs.end());
  const bool by_function = fun.is_array() || funs.size() > 1;
  funs = MineFunctionsAllowed(ctx, requester, std::move(funs));
  if (funs.empty()) return out;
  auto resolved = ResolveTargets(ctx, tgt, MineTargetType(tgt_type), ":", /*greedy=*/false);
  if (!resolved.ok()) {
    // A bad or over-costly target from a minion: an empty answer, as Salt gives for a target
    // it cannot match, and one line per period however often a minion sends it.
    static LogLimiter limiter(std::chrono::seconds(10));
    if (auto suppressed = limiter.Pass()) {
      spdlog::warn("mine_get from '{}' with {} target: {}; answered empty{}", requester,
                   Printable(tgt_type), Printable(resolved.error().ToString()),
                   SuppressedSuffix(*suppressed));
    }
    return out;
  }
  // The answer is built by appending, never by looking up what it holds so far: with Set and
  // Find, a mine_get '*' over 10,000 minions compared each id with every id before it (50
  // million comparisons), and one naming 5,000 functions each name with every name before.
  // The resolved ids are distinct, so an id is only ever the last one appended.
  AllowedFor allowed_for;
  wire::Map by_minion;
  // Per function answered, in order of first answer; fun_slot[i] is funs[i]'s place in it.
  std::vector<std::pair<std::size_t, wire::Map>> by_fun;
  constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);
  std::vector<std::size_t> fun_slot(funs.size(), kNoSlot);
  auto put = [](wire::Map& into, const std::string& id, const wire::Value& value) {
    // A function named twice in one minion's mine: the last entry wins, as in a dict.
    if (!into.empty() && into.back().first.str() && *into.back().first.str() == id) {
      into.back().second = value;
    } else {
      into.emplace_back(wire::Value(id), value);
    }
  };
  for (const auto& id : resolved->minions) {
    const wire::Value mine = ctx.minion_data->Mine(id);
    const wire::Map* entries = mine.map();
    if (entries == nullptr) continue;
    // The minion's entries against the sorted request, not the request against each minion:
    // a request may name a million functions, a minion's mine holds a few.
    for (const auto& [key, entry] : *entries) {
      const std::string* f = key.str();
      if (f == nullptr) continue;
      const auto named = std::lower_bound(funs.begin(), funs.end(), *f);
      if (named == funs.end() || *named != *f) continue;
      const wire::Value* value = MineValueFor(ctx, &entry, requester, allowed_for);
      if (!value) continue;
      if (!by_function) {
        put(by_minion, id, *value);
        continue;
      }
      std::size_t& slot = fun_slot[named - funs.begin()];
      if (slot == kNoSlot) {
        slot = by_fun.size();
        by_fun.emplace_back(named - funs.begin(), wire::Map());
      }
      put(by_fun[slot].second, id, *value);
    }
  }
  if (!by_function) return wire::Value(std::move(by_minion));
  for (auto& [f, answers] : by_fun) {
    out.map()->emplace_back(wire::Value(funs[f]), wire::Value(std::move(answers)));
  }
  return out;
}

}  // namespace halite::master
