#include "halite/runners/runner.h"

#include "halite/wire/glob.h"
#include "halite/wire/target.h"

namespace halite::runners {

namespace {

const wire::Value& Nil() {
  static const wire::Value kNil;
  return kNil;
}

// Python's "'a', 'b' and 'c'".
std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? (names.size() > 2 ? ", and " : " and ") : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

std::string ShortName(std::string_view function) {
  std::size_t dot = function.rfind('.');
  return std::string(dot == std::string_view::npos ? function : function.substr(dot + 1));
}

}  // namespace

const wire::Value& BoundArgs::Get(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? Nil() : it->second;
}

std::string BoundArgs::Text(std::string_view name) const {
  const wire::Value& v = Get(name);
  if (v.is_nil()) return "";
  if (const std::string* s = v.str()) return *s;
  return wire::ScalarToString(v);
}

Result<BoundArgs> Bind(std::string_view function, const std::vector<Param>& params,
                       bool takes_kwargs, const wire::Array& args) {
  const std::string fn = ShortName(function) + "()";
  BoundArgs bound;
  std::vector<const wire::Value*> positional;
  const wire::Map* kwargs = nullptr;
  for (const wire::Value& a : args) {
    if (const wire::Value* marker = a.Find("__kwarg__"); marker && marker->Truthy() && a.map()) {
      kwargs = a.map();
      continue;
    }
    positional.push_back(&a);
  }
  if (positional.size() > params.size()) {
    std::size_t required = 0;
    for (const Param& p : params) required += p.fallback ? 0 : 1;
    std::string takes = required == params.size() ? std::to_string(params.size())
                                                  : "from " + std::to_string(required) + " to " +
                                                        std::to_string(params.size());
    bool one = required == params.size() && params.size() == 1;
    return Error::InvalidArgument(fn + " takes " + takes + " positional argument" +
                                  (one ? "" : "s") + " but " + std::to_string(positional.size()) +
                                  (positional.size() == 1 ? " was" : " were") + " given");
  }
  for (std::size_t i = 0; i < positional.size(); ++i) {
    bound.values_[params[i].name] = *positional[i];
  }
  if (kwargs) {
    for (const auto& [k, v] : *kwargs) {
      const std::string* key = k.str();
      if (!key || *key == "__kwarg__") continue;
      bool known = false;
      for (const Param& p : params) known = known || p.name == *key;
      if (!known) {
        if (!takes_kwargs) {
          return Error::InvalidArgument(fn + " got an unexpected keyword argument '" + *key + "'");
        }
        bound.extra_.Set(*key, v);
        continue;
      }
      if (bound.values_.contains(*key)) {
        return Error::InvalidArgument(fn + " got multiple values for argument '" + *key + "'");
      }
      bound.values_[*key] = v;
    }
  }
  std::vector<std::string> missing;
  for (const Param& p : params) {
    if (bound.values_.contains(p.name)) continue;
    if (p.fallback) {
      bound.values_[p.name] = *p.fallback;
    } else {
      missing.push_back(p.name);
    }
  }
  if (!missing.empty()) {
    return Error::InvalidArgument(fn + " missing " + std::to_string(missing.size()) +
                                  " required positional argument" +
                                  (missing.size() == 1 ? "" : "s") + ": " + QuotedList(missing));
  }
  return bound;
}

void RunnerTable::Add(Runner runner) {
  std::string name = runner.name;
  runners_.insert_or_assign(std::move(name), std::move(runner));
}

const Runner* RunnerTable::Find(std::string_view name) const {
  auto it = runners_.find(name);
  return it == runners_.end() ? nullptr : &it->second;
}

std::vector<const Runner*> RunnerTable::Docs(std::string_view arg) const {
  std::vector<const Runner*> out;
  const bool glob = arg.find('*') != std::string_view::npos;
  std::string module(arg);
  if (!glob && !module.empty() && module.back() != '.') module += '.';
  for (const auto& [name, runner] : runners_) {
    bool hit = arg.empty() ||
               (glob ? wire::GlobMatch(arg, name) : name == arg || name.rfind(module, 0) == 0);
    if (hit) out.push_back(&runner);
  }
  return out;
}

RunnerTable BuiltinRunners() {
  RunnerTable table;
  AddJobsRunners(table);
  AddManageRunners(table);
  AddCacheRunners(table);
  AddFileserverRunners(table);
  AddClusterRunners(table);
  return table;
}

}  // namespace halite::runners
