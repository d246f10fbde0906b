// Salt's pillar merging strategies (salt.utils.dictupdate.merge), on wire::Values. Maps keep
// their key order; a key `b` adds goes to the end.

#include <spdlog/spdlog.h>

#include "halite/pillar/compiler.h"
#include "halite/wire/glob.h"

namespace halite::pillar {
namespace {

bool Contains(const wire::Array& list, const wire::Value& v) {
  for (const auto& x : list) {
    if (x == v) return true;
  }
  return false;
}

// dictupdate.update: `upd` into `dest`, maps recursively, lists replaced (or extended with
// what they lack, under merge_lists), anything else replaced.
void Update(wire::Value& dest, const wire::Value& upd, bool merge_lists) {
  if (!dest.is_map() || !upd.is_map()) {
    dest = upd;
    return;
  }
  for (const auto& [k, v] : *upd.map()) {
    wire::Value* cur = nullptr;
    for (auto& [dk, dv] : *dest.map()) {
      if (dk == k) {
        cur = &dv;
        break;
      }
    }
    if (cur == nullptr) {
      dest.map()->emplace_back(k, v);
    } else if (cur->is_map() && v.is_map()) {
      Update(*cur, v, merge_lists);
    } else if (merge_lists && cur->is_array() && v.is_array()) {
      for (const auto& item : *v.array()) {
        if (!Contains(*cur->array(), item)) cur->array()->push_back(item);
      }
    } else {
      *cur = v;
    }
  }
}

wire::Value* FindKey(wire::Value& m, const wire::Value& key) {
  for (auto& [k, v] : *m.map()) {
    if (k == key) return &v;
  }
  return nullptr;
}

const wire::Value* FindKey(const wire::Value& m, const wire::Value& key) {
  for (const auto& [k, v] : *m.map()) {
    if (k == key) return &v;
  }
  return nullptr;
}

// salt.utils.aggregation.aggregate for data nobody marked (no yamlex tags): at the top level
// both maps' keys are kept; below it, a map keeps only the keys of `b` (merged), and any
// other value is `b`'s.
wire::Value Aggregate(const wire::Value& a, const wire::Value& b, bool top) {
  if (a.is_map() && b.is_map()) {
    wire::Value out = top ? a : b;
    for (const auto& [k, v] : *b.map()) {
      const wire::Value* av = FindKey(a, k);
      wire::Value merged = av ? Aggregate(*av, v, false) : v;
      if (wire::Value* slot = FindKey(out, k)) {
        *slot = std::move(merged);
      } else {
        out.map()->emplace_back(k, std::move(merged));
      }
    }
    return out;
  }
  return b;
}

}  // namespace

wire::Value Merge(const wire::Value& a, const wire::Value& b, const std::string& strategy,
                  const std::string& renderer, bool merge_lists) {
  std::string s = strategy;
  if (s == "smart") {
    const auto bar = renderer.rfind('|');
    const std::string last = bar == std::string::npos ? renderer : renderer.substr(bar + 1);
    s = (last == "yamlex" || renderer.rfind("yamlex_", 0) == 0) ? "aggregate" : "recurse";
  }
  if (!a.is_map() || !b.is_map()) return b;
  if (s == "aggregate") return Aggregate(a, b, true);
  wire::Value out = a;
  if (s == "overwrite") {
    for (const auto& [k, v] : *b.map()) {
      if (wire::Value* slot = FindKey(out, k)) *slot = v;
    }
    Update(out, b, merge_lists);
    return out;
  }
  if (s == "list") {
    wire::Value ret = wire::Value::EmptyMap();
    for (const auto& [k, v] : *a.map()) {
      const wire::Value* bv = FindKey(b, k);
      ret.map()->emplace_back(k, bv ? wire::Value(wire::Array{v, *bv}) : v);
    }
    return ret;
  }
  if (s != "recurse" && s != "none") {
    spdlog::warn("Unknown merging strategy '{}', fallback to recurse", strategy);
    Update(out, b, false);
    return out;
  }
  Update(out, b, s == "recurse" && merge_lists);
  return out;
}

std::vector<std::string> FnmatchFilter(const std::vector<std::string>& names,
                                       const std::string& pattern) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (wire::GlobMatch(pattern, n)) out.push_back(n);
  }
  return out;
}

}  // namespace halite::pillar
