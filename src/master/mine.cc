// The mine as a requester may read it (include/halite/master/mine.h).
#include "halite/master/mine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
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

// A mine entry as `requester` may see it: the value itself, or, for an entry stored with
// Salt's minion-side ACL ({"__saltmine_acl__": 1, "__data__": v, "allow_tgt": ...}), its data
// when `requester` matches allow_tgt. nullptr: nothing to show.
const wire::Value* MineValueFor(MasterContext& ctx, const wire::Value* entry,
                                const std::string& requester) {
  if (!entry || !entry->is_map() || !entry->Find("__saltmine_acl__")) return entry;
  if (const wire::Value* allow_tgt = entry->Find("allow_tgt"); allow_tgt && allow_tgt->Truthy()) {
    // Salt resolves allow_tgt over every minion and looks for the requester in the result;
    // matching the requester alone gives the same answer with one match instead of one per
    // accepted minion, for every entry of every minion a mine_get returns.
    const std::string* type = entry->FindStr("allow_tgt_type");
    auto allowed = TargetIncludes(ctx, *allow_tgt, type ? *type : "glob", requester);
    if (!allowed.ok() || !*allowed) return nullptr;
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
  for (const auto& id : resolved->minions) {
    const wire::Value mine = ctx.minion_data->Mine(id);
    const wire::Map* entries = mine.map();
    if (entries == nullptr) continue;
    // The minion's entries against the sorted request, not the request against each minion:
    // a request may name a million functions, a minion's mine holds a few.
    for (const auto& [key, entry] : *entries) {
      const std::string* f = key.str();
      if (f == nullptr || !std::binary_search(funs.begin(), funs.end(), *f)) continue;
      const wire::Value* value = MineValueFor(ctx, &entry, requester);
      if (!value) continue;
      if (by_function) {
        if (!out.Find(*f)) out.Set(*f, wire::Value::EmptyMap());
        out.Find(*f)->Set(id, *value);
      } else {
        out.Set(id, *value);
      }
    }
  }
  return out;
}

}  // namespace halite::master
