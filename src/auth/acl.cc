#include "halite/auth/acl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "halite/wire/glob.h"
#include "halite/wire/regex.h"
#include "halite/wire/target.h"

namespace halite::auth {

namespace {

// re.match(regex, text); an invalid regex or one over its limits matches nothing (Salt logs
// "Invalid regular expression" and the entry does not count).
std::optional<bool> ReMatch(std::string_view regex, std::string_view text) {
  auto compiled = wire::CompileRegexCached(regex);
  if (!compiled.ok()) {
    spdlog::error("external_auth: invalid regular expression '{}': {}", regex,
                  compiled.error().message);
    return std::nullopt;
  }
  auto hit = compiled->Match(text, wire::RegexAnchor::kStart);
  if (!hit.ok()) return std::nullopt;
  return *hit;
}

// match_check: every function of `fun` (a name or a list of names) matches `regex`.
bool MatchCheck(std::string_view regex, const wire::Value& fun) {
  std::vector<std::string_view> funs;
  if (const std::string* s = fun.str()) {
    funs.push_back(*s);
  } else if (const wire::Array* a = fun.array()) {
    for (const auto& f : *a) {
      if (!f.str()) return false;
      funs.push_back(*f.str());
    }
  } else {
    return false;
  }
  std::vector<bool> vals;
  for (std::string_view f : funs) {
    if (auto hit = ReMatch(regex, f)) vals.push_back(*hit);
  }
  return !vals.empty() && std::all_of(vals.begin(), vals.end(), [](bool b) { return b; });
}

std::string PyStr(const wire::Value& v) {
  if (v.is_array() || v.is_map()) return v.ToJson();
  return wire::ScalarToString(v);
}

// Salt's ACL entries are one condition or a list of them; the entries, uncopied.
std::vector<const wire::Value*> OneOrList(const wire::Value& valid) {
  std::vector<const wire::Value*> out;
  if (const wire::Array* a = valid.array()) {
    for (const wire::Value& v : *a) out.push_back(&v);
  } else {
    out.push_back(&valid);
  }
  return out;
}

// __args_check: `valid` is {"args": [...], "kwargs": {...}} or a list of them; a null
// pattern allows any value.
bool ArgsCheck(const wire::Value& valid, const wire::Value& args, const wire::Value& kwargs) {
  for (const wire::Value* each : OneOrList(valid)) {
    const wire::Value& cond = *each;
    if (!cond.is_map()) continue;
    bool good = true;
    if (const wire::Value* cond_args = cond.Find("args"); cond_args && cond_args->array()) {
      const wire::Array* given = args.array();
      for (std::size_t i = 0; i < cond_args->array()->size(); ++i) {
        const wire::Value& pattern = (*cond_args->array())[i];
        if (!given || given->size() <= i) {
          good = false;
          break;
        }
        if (pattern.is_nil()) continue;
        if (!pattern.str() || !MatchCheck(*pattern.str(), PyStr((*given)[i]))) {
          good = false;
          break;
        }
      }
    }
    if (!good) continue;
    if (const wire::Value* cond_kwargs = cond.Find("kwargs"); cond_kwargs && cond_kwargs->map()) {
      for (const auto& [k, pattern] : *cond_kwargs->map()) {
        const wire::Value* given = k.str() ? kwargs.Find(*k.str()) : nullptr;
        if (!given) {
          good = false;
          break;
        }
        if (pattern.is_nil()) continue;
        if (!pattern.str() || !MatchCheck(*pattern.str(), PyStr(*given))) {
          good = false;
          break;
        }
      }
    }
    if (good) return true;
  }
  return false;
}

// __fun_check: `valid` is a regex, a {regex: args-conditions} map, or a list of them.
bool FunCheck(const wire::Value& valid, std::string_view fun, const wire::Value& args,
              const wire::Value& kwargs) {
  for (const wire::Value* each : OneOrList(valid)) {
    const wire::Value& cond = *each;
    if (const std::string* regex = cond.str()) {
      if (MatchCheck(*regex, wire::Value(fun))) return true;
    } else if (const wire::Map* m = cond.map()) {
      if (m->size() != 1 || !m->front().first.str()) continue;
      if (MatchCheck(*m->front().first.str(), wire::Value(fun)) &&
          ArgsCheck(m->front().second, args, kwargs)) {
        return true;
      }
    }
  }
  return false;
}

// validate_tgt: every minion `tgt` selects is one the entry's compound target `valid` selects.
bool ValidateTarget(std::string_view valid, const wire::Value& tgt, std::string_view tgt_type,
                    const MinionResolver& resolve) {
  if (!resolve) return false;
  auto allowed = resolve(wire::Value(valid), "compound");
  auto wanted = resolve(tgt, tgt_type);
  if (!allowed.ok() || !wanted.ok()) return false;
  return std::all_of(wanted->begin(), wanted->end(),
                     [&](const std::string& id) { return allowed->count(id) > 0; });
}

const wire::Value* ListOrNull(const wire::Value& v) { return v.array() ? &v : nullptr; }

}  // namespace

bool ExprMatch(std::string_view line, std::string_view expr) {
  if (line == expr) return true;
  if (wire::GlobMatch(expr, line)) return true;
  auto compiled = wire::CompileRegexCached(expr);
  if (!compiled.ok()) return false;
  auto hit = compiled->Match(line, wire::RegexAnchor::kFull);
  return hit.ok() && *hit;
}

wire::Array FillAuthList(const wire::Value& provider, std::string_view name,
                         const std::vector<std::string>& groups, bool permissive) {
  wire::Array out;
  const wire::Map* entries = provider.map();
  if (!entries) return out;
  auto extend = [&](const wire::Value& list) {
    if (const wire::Array* a = list.array()) {
      out.insert(out.end(), a->begin(), a->end());
    } else if (!list.is_nil()) {
      out.push_back(list);
    }
  };
  bool name_matched = false;
  const wire::Value* star = nullptr;
  for (const auto& [key, list] : *entries) {
    const std::string* match = key.str();
    if (!match || match->empty() || (*match)[0] == '^') continue;
    if (*match == "*") {
      star = &list;
      if (!permissive) continue;
    }
    if (match->back() == '%') {
      std::string group = match->substr(0, match->size() - 1);
      if (std::find(groups.begin(), groups.end(), group) != groups.end()) extend(list);
    } else if (ExprMatch(name, *match)) {
      name_matched = true;
      extend(list);
    }
  }
  if (!permissive && !name_matched && star) extend(*star);
  return out;
}

wire::Array LoginPermissions(const wire::Value& provider, std::string_view name,
                             const std::vector<std::string>& groups) {
  wire::Array perms;
  auto extend = [&](const wire::Value* list) {
    if (!list) return;
    if (const wire::Array* a = list->array()) perms.insert(perms.end(), a->begin(), a->end());
  };
  extend(provider.Find(name));
  extend(provider.Find("*"));
  for (const std::string& g : groups) extend(provider.Find(g + "%"));
  std::vector<std::string> strs;
  std::vector<wire::Value> others;
  for (auto& p : perms) {
    if (const std::string* s = p.str()) {
      if (std::find(strs.begin(), strs.end(), *s) == strs.end()) strs.push_back(*s);
    } else if (std::find(others.begin(), others.end(), p) == others.end()) {
      others.push_back(p);
    }
  }
  std::sort(strs.begin(), strs.end());
  std::stable_sort(others.begin(), others.end(), [](const wire::Value& a, const wire::Value& b) {
    return a.ToJson() < b.ToJson();
  });
  wire::Array out(strs.begin(), strs.end());
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

bool AuthCheck(const wire::Array& auth_list, const wire::Value& funs, const wire::Value& args,
               const wire::Value& tgt, std::string_view tgt_type, const MinionResolver& resolve) {
  wire::Array fun_list;
  wire::Array arg_lists;
  if (const wire::Array* f = funs.array()) {
    fun_list = *f;
    if (const wire::Array* a = args.array()) arg_lists = *a;
  } else {
    fun_list.push_back(funs);
    arg_lists.push_back(args);
  }
  for (std::size_t num = 0; num < fun_list.size(); ++num) {
    const std::string* fun = fun_list[num].str();
    if (!fun) return false;
    for (const wire::Value& ind : auth_list) {
      if (const std::string* regex = ind.str()) {
        if (MatchCheck(*regex, fun_list[num])) return true;
      } else if (const wire::Map* m = ind.map()) {
        if (m->size() != 1 || !m->front().first.str()) continue;
        const std::string& valid = *m->front().first.str();
        if (!ValidateTarget(valid, tgt, tgt_type, resolve)) continue;
        wire::Value fun_args = num < arg_lists.size() && ListOrNull(arg_lists[num])
                                   ? arg_lists[num]
                                   : wire::Value::EmptyArray();
        wire::Value fun_kwargs;
        wire::Array& positional = *fun_args.array();
        if (!positional.empty() && positional.back().is_map() &&
            positional.back().Find("__kwarg__")) {
          fun_kwargs = positional.back();
          positional.pop_back();
        }
        if (FunCheck(m->front().second, *fun, fun_args, fun_kwargs)) return true;
      }
    }
  }
  return false;
}

Result<bool> SpecCheck(const wire::Array& auth_list, std::string_view fun, const wire::Value& arg,
                       const wire::Value& kwarg, SpecForm form) {
  if (auth_list.empty()) return false;
  const std::string_view form_name = form == SpecForm::kRunner ? "runner" : "wheel";
  const std::size_t dot = fun.find('.');
  if (dot == std::string_view::npos || fun.find('.', dot + 1) != std::string_view::npos) {
    return Error::InvalidArgument("A command invocation error occurred: Check syntax.");
  }
  const std::string_view mod_name = fun.substr(0, dot);
  const std::string_view fun_name = fun.substr(dot + 1);
  const std::string plural = "@" + std::string(form_name) + "s";
  for (const wire::Value& ind : auth_list) {
    if (const std::string* s = ind.str()) {
      if (!s->empty() && (*s)[0] == '@') {
        std::string_view rest = std::string_view(*s).substr(1);
        if (rest == mod_name || rest == form_name || *s == plural) return true;
      }
    } else if (const wire::Map* m = ind.map()) {
      if (m->size() != 1 || !m->front().first.str()) continue;
      const std::string& valid = *m->front().first.str();
      if (valid.empty() || valid[0] != '@') continue;
      std::string_view rest = std::string_view(valid).substr(1);
      if (rest == mod_name && FunCheck(m->front().second, fun_name, arg, kwarg)) return true;
      if ((rest == form_name || valid == plural) && FunCheck(m->front().second, fun, arg, kwarg)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace halite::auth
