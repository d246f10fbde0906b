// Pillar compilation: Salt's Pillar.compile_pillar, step by step (get_tops, merge_tops,
// top_matches, render_pillar, render_pstate), with Salt's error messages. Only rendering a
// file is delegated (render::Renderer).

#include "halite/pillar/compiler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "halite/wire/target.h"
#include "roots.h"

namespace halite::pillar {
namespace {

namespace fs = std::filesystem;
// Reads "match" from a top target's list; Salt's confirm_top defaults to compound.
std::string MatcherOf(const wire::Value& data) {
  std::string matcher = "compound";
  if (const wire::Array* items = data.array()) {
    for (const auto& item : *items) {
      if (!item.is_map()) continue;
      if (const wire::Value* m = item.Find("match")) matcher = ToText(*m);
    }
  }
  return matcher;
}

class Compilation {
 public:
  Compilation(const PillarSettings& s, render::Renderer& r, const PillarRequest& req)
      : s_(s), renderer_(r), req_(req) {
    roots_ = s_.roots;
    pillarenv_ = req_.pillarenv;
    if (pillarenv_.empty()) {
      pillarenv_ =
          (s_.pillarenv_from_saltenv && !req_.saltenv.empty()) ? req_.saltenv : s_.pillarenv;
    }
    ResolveEnvPlaceholder();
    opts_ = BuildOpts();
    override_ = req_.pillar_override.is_map() ? req_.pillar_override : wire::Value::EmptyMap();
  }

  wire::Value Run() {
    auto tops = GetTops();
    wire::Value top = MergeTops(tops);
    wire::Value pillar;
    const bool ext = !s_.ext_pillar.is_nil();
    if (ext && s_.ext_pillar_first) {
      // The external data comes first and is what templates see as `pillar`.
      template_pillar_ = ExtPillars(override_);
      auto matches = TopMatches(top);
      pillar = MergeData(template_pillar_, RenderPillar(matches));
    } else {
      auto matches = TopMatches(top);
      pillar = RenderPillar(matches);
      if (ext) pillar = ExtPillars(pillar);
    }
    for (auto& e : top_errors_) errors_.push_back(std::move(e));
    if (!errors_.empty()) {
      wire::Array list;
      for (const auto& e : errors_) {
        spdlog::critical("Pillar render error: {}", e);
        list.emplace_back(e);
      }
      pillar.Set("_errors", wire::Value(std::move(list)));
    }
    if (!override_.map()->empty()) pillar = MergeData(pillar, override_);
    return pillar;
  }

 private:
  // pillar_roots' `__env__` stands for the requested environment when it has no roots of its own.
  void ResolveEnvPlaceholder() {
    auto it =
        std::find_if(roots_.begin(), roots_.end(), [](auto& e) { return e.first == "__env__"; });
    if (it == roots_.end()) return;
    std::string env =
        !pillarenv_.empty() ? pillarenv_ : (!req_.saltenv.empty() ? req_.saltenv : "base");
    auto dirs = it->second;
    roots_.erase(it);
    if (RootsOf(roots_, env)) return;
    for (auto& d : dirs) {
      for (std::size_t pos; (pos = d.find("__env__")) != std::string::npos;) d.replace(pos, 7, env);
    }
    roots_.emplace_back(env, dirs);
  }

  wire::Value MergeData(const wire::Value& a, const wire::Value& b) const {
    return Merge(a, b, s_.merging_strategy, s_.renderer, s_.merge_lists);
  }

  // The templates' `opts`: the same for every file of one compilation, built once.
  wire::Value BuildOpts() const {
    wire::Value opts = s_.opts.is_map() ? s_.opts : wire::Value::EmptyMap();
    opts.Set("id", req_.id);
    opts.Set("minion_id", req_.id);
    opts.Set("saltenv", req_.saltenv.empty() ? wire::Value() : wire::Value(req_.saltenv));
    opts.Set("pillarenv", pillarenv_.empty() ? wire::Value() : wire::Value(pillarenv_));
    opts.Set("grains", req_.grains);
    wire::Value roots = wire::Value::EmptyMap();
    for (const auto& [env, dirs] : roots_) {
      wire::Array a;
      for (const auto& d : dirs) a.emplace_back(d);
      roots.Set(env, wire::Value(std::move(a)));
    }
    opts.Set("pillar_roots", roots);
    return opts;
  }

  wire::Value Context(const wire::Value* defaults) const {
    wire::Value ctx = wire::Value::EmptyMap();
    if (defaults && defaults->is_map()) {
      for (const auto& [k, v] : *defaults->map()) {
        if (const std::string* key = k.str()) ctx.Set(*key, v);
      }
    }
    ctx.Set("grains", req_.grains);
    ctx.Set("pillar", template_pillar_);
    ctx.Set("opts", opts_);
    return ctx;
  }

  Result<wire::Value> RenderFile(const std::string& path, const std::string& saltenv,
                                 const std::string& sls, const wire::Value* defaults) {
    render::RenderRequest r;
    r.file = path;
    if (const auto* dirs = RootsOf(roots_, saltenv)) r.searchpath = *dirs;
    r.saltenv = saltenv;
    r.sls = sls;
    r.context = Context(defaults);
    r.host = req_.host;
    auto out = renderer_.Render(r);
    if (!out.ok()) {
      spdlog::error("pillar for {}: {} ({} in {}): {}", req_.id, sls.empty() ? "top file" : sls,
                    path, saltenv, out.error().message);
    }
    return out;
  }

  std::vector<std::string> Saltenvs() const {
    std::vector<std::string> envs;
    if (!pillarenv_.empty()) {
      if (RootsOf(roots_, pillarenv_)) envs.push_back(pillarenv_);
      return envs;
    }
    envs.push_back("base");
    for (const auto& [env, _] : roots_) {
      if (std::find(envs.begin(), envs.end(), env) == envs.end()) envs.push_back(env);
    }
    if (s_.merging_strategy == "none") {
      const std::string only = req_.saltenv.empty() ? "base" : req_.saltenv;
      std::erase_if(envs, [&](const std::string& e) { return e != only; });
    }
    return envs;
  }

  std::vector<wire::Value>& TopsOf(Tops& tops, const std::string& env) {
    for (auto& [e, list] : tops) {
      if (e == env) return list;
    }
    tops.emplace_back(env, std::vector<wire::Value>{});
    return tops.back().second;
  }

  Tops GetTops() {
    Tops tops;
    for (const auto& env : Saltenvs()) {
      const auto* dirs = RootsOf(roots_, env);
      if (!dirs) continue;
      auto top = FindFile(*dirs, s_.state_top);
      if (!top) continue;
      auto rendered = RenderFile(*top, env, "", nullptr);
      if (!rendered.ok()) {
        // Salt renders every environment's top inside one try: the first failure ends it.
        top_errors_.push_back("Rendering Primary Top file failed, render error:\n" +
                              rendered.error().message);
        break;
      }
      TopsOf(tops, env).push_back(std::move(*rendered));
    }
    // A top file's `include:` names more top files (as sls) in the same environment.
    std::map<std::string, std::set<std::string>> done;
    for (bool more = true; more;) {
      more = false;
      for (auto& [env, list] : tops) {
        std::vector<std::string> includes;
        for (auto& ctop : list) {
          if (!ctop.is_map()) continue;
          if (const wire::Value* inc = ctop.Find("include")) {
            if (const wire::Array* a = inc->array()) {
              for (const auto& x : *a) includes.push_back(ToText(x));
            }
            ctop.Erase("include");
          }
        }
        const auto* dirs = RootsOf(roots_, env);
        for (const auto& sls : includes) {
          if (!done[env].insert(sls).second) continue;
          auto found = dirs ? FindSls(*dirs, sls) : std::nullopt;
          if (!found) {
            // Salt compiles a missing included top as an empty template: nothing, no error.
            spdlog::warn("pillar for {}: top include '{}' not found in {}", req_.id, sls, env);
            continue;
          }
          Result<wire::Value> rendered = RenderFile(found->path, env, "", nullptr);
          if (!rendered.ok()) {
            top_errors_.push_back("Rendering Top file " + sls + " failed, render error:\n" +
                                  rendered.error().message);
            continue;
          }
          list.push_back(std::move(*rendered));
          more = true;
        }
      }
    }
    return tops;
  }

  wire::Value MergeTops(const Tops& tops) { return pillar::MergeTops(tops, top_errors_, ignored_); }

  bool Confirm(const std::string& target, const wire::Value& data) const {
    const std::string matcher = MatcherOf(data);
    wire::TargetContext ctx;
    ctx.id = req_.id;
    ctx.grains = &req_.grains;
    ctx.pillar = &template_pillar_;
    ctx.nodegroups = &s_.nodegroups;
    auto r = wire::MatchTarget(wire::Value(target), matcher, ctx);
    if (!r.ok()) {
      spdlog::warn("pillar top for {}: target '{}' ({}): {}", req_.id, target, matcher,
                   r.error().message);
      return false;
    }
    return *r;
  }

  using Matches = std::vector<std::pair<std::string, std::vector<std::string>>>;

  Matches TopMatches(const wire::Value& top) const {
    Matches out;
    if (!top.is_map()) return out;
    for (const auto& [envk, body] : *top.map()) {
      const std::string env = ToText(envk);
      if (!pillarenv_.empty() && env != pillarenv_) continue;
      if (!body.is_map()) continue;
      for (const auto& [tk, data] : *body.map()) {
        if (!Confirm(ToText(tk), data)) continue;
        auto slot = std::find_if(out.begin(), out.end(), [&](auto& e) { return e.first == env; });
        if (slot == out.end()) {
          out.emplace_back(env, std::vector<std::string>{});
          slot = out.end() - 1;
        }
        for (const auto& item : *data.array()) {
          const std::string* sls = item.str();
          if (sls &&
              std::find(slot->second.begin(), slot->second.end(), *sls) == slot->second.end()) {
            slot->second.push_back(*sls);
          }
        }
      }
    }
    return out;
  }

  const std::vector<std::string>* Avail(const std::string& env) {
    auto it = avail_.find(env);
    if (it != avail_.end()) return &it->second;
    const auto* dirs = RootsOf(roots_, env);
    if (!dirs) return nullptr;
    return &(avail_[env] = ListStates(*dirs));
  }

  wire::Value RenderPillar(const Matches& matches) {
    wire::Value pillar = override_;
    for (const auto& [env, pstates] : matches) {
      std::vector<std::string> files;
      for (const auto& m : pstates) {
        const auto* avail = Avail(env);
        std::vector<std::string> found;
        if (!avail) {
          errors_.push_back("No matching pillar environment for environment '" + env + "' found");
        } else {
          found = FnmatchFilter(*avail, m);
        }
        if (found.empty()) {
          files.push_back(m);
        } else {
          files.insert(files.end(), found.begin(), found.end());
        }
      }
      mods_.clear();
      for (const auto& sls : files) {
        auto state = RenderPstate(sls, env, nullptr);
        if (!state) continue;
        if (!state->is_map()) continue;
        pillar = MergeData(pillar, *state);
      }
    }
    return pillar;
  }

  void Report(std::string msg) {
    spdlog::error("pillar for {}: {}", req_.id, msg);
    errors_.push_back(std::move(msg));
  }

  // render_pstate: nullopt for "nothing" (Salt's None).
  std::optional<wire::Value> RenderPstate(const std::string& sls, const std::string& env,
                                          const wire::Value* defaults) {
    const auto* dirs = RootsOf(roots_, env);
    auto found = dirs ? FindSls(*dirs, sls) : std::nullopt;
    if (!found) {
      if (ignored_[env].count(sls)) {
        spdlog::debug("Skipping ignored and missing SLS '{}' in environment '{}'", sls, env);
        return std::nullopt;
      }
      if (dirs && !dirs->empty()) {
        std::string msg = "Specified SLS '" + sls + "' in environment '" + env +
                          "' is not available on the salt master";
        spdlog::error("pillar for {}: {}", req_.id, msg);
        errors_.push_back(std::move(msg));
      } else {
        spdlog::debug("pillar for {}: Specified SLS '{}' in environment '{}' was not found.",
                      req_.id, sls, env);
      }
      mods_[sls] = std::nullopt;
      return std::nullopt;
    }
    std::optional<wire::Value> state;
    auto rendered = RenderFile(found->path, env, sls, defaults);
    if (rendered.ok()) {
      state = std::move(*rendered);
    } else if (s_.safe_render_error) {
      errors_.push_back("Rendering SLS '" + sls + "' failed. Please see master log for details.");
    } else {
      errors_.push_back("Rendering SLS '" + sls + "' failed, render error:\n" +
                        rendered.error().message);
    }
    if (!state || !state->Truthy()) {
      mods_[sls] = state;
      return state;
    }
    if (!state->is_map()) {
      Report("SLS '" + sls + "' does not render to a dictionary");
      mods_[sls] = state;
      return state;
    }
    const wire::Value* inc = state->Find("include");
    if (!inc) {
      mods_[sls] = state;
      return state;
    }
    if (!inc->is_array()) {
      Report("Include Declaration in SLS '" + sls + "' is not formed as a list");
      mods_[sls] = state;
      return state;
    }
    wire::Array includes = *inc->array();
    state->Erase("include");
    mods_[sls] = state;
    std::vector<wire::Value> include_states;
    for (const auto& item : includes) {
      std::string sub;
      std::string key;
      wire::Value sub_defaults = wire::Value::EmptyMap();
      if (item.is_map() && !item.map()->empty()) {
        const auto& [k, v] = item.map()->front();
        sub = ToText(k);
        if (v.is_map()) {
          if (const wire::Value* d = v.Find("defaults")) sub_defaults = *d;
          if (const wire::Value* kk = v.Find("key"); kk && !kk->is_nil()) key = ToText(*kk);
        }
      } else {
        sub = ToText(item);
      }
      std::vector<std::string> matched;
      const auto* avail = Avail(env);
      if (!avail) {
        errors_.push_back("No matching pillar environment for environment '" + env + "' found");
        matched = {sub};
      } else {
        std::string stripped = sub;
        stripped.erase(0, stripped.find_first_not_of('.'));
        std::replace(stripped.begin(), stripped.end(), '/', '.');
        matched = FnmatchFilter(*avail, stripped);
        if (!sub.empty() && sub[0] == '.') {
          std::vector<std::string> parts;
          std::string cur;
          for (char c : sls) {
            if (c == '.') {
              parts.push_back(cur);
              cur.clear();
            } else {
              cur += c;
            }
          }
          parts.push_back(cur);
          if (!found->init) parts.pop_back();
          std::string joined;
          for (const auto& p : parts) joined += p + ".";
          sub = joined + sub.substr(1);
        }
        auto more = FnmatchFilter(*avail, sub);
        matched.insert(matched.end(), more.begin(), more.end());
      }
      if (matched.empty()) matched = {sub};
      for (const auto& m : matched) {
        std::optional<wire::Value> nstate;
        if (auto it = mods_.find(m); it != mods_.end()) {
          nstate = it->second;
        } else {
          nstate = RenderPstate(m, env, &sub_defaults);
        }
        if (nstate && nstate->Truthy()) {
          if (!key.empty()) {
            std::vector<std::string> frags;
            std::size_t start = 0;
            for (std::size_t pos; (pos = key.find(':', start)) != std::string::npos;
                 start = pos + 1) {
              frags.push_back(key.substr(start, pos - start));
            }
            frags.push_back(key.substr(start));
            for (auto it = frags.rbegin(); it != frags.rend(); ++it) {
              wire::Value wrapped = wire::Value::EmptyMap();
              wrapped.Set(*it, std::move(*nstate));
              nstate = std::move(wrapped);
            }
          }
          if (!s_.includes_override_sls) {
            include_states.push_back(std::move(*nstate));
          } else {
            *state = MergeData(*state, *nstate);
          }
        }
      }
    }
    if (!s_.includes_override_sls) {
      include_states.push_back(std::move(*state));
      std::optional<wire::Value> merged;
      for (auto& s : include_states) {
        merged = merged ? MergeData(*merged, s) : std::move(s);
      }
      state = std::move(merged);
    }
    return state;
  }

  // Salt's Pillar.ext_pillar: each {name: args} in order, merged into `pillar` (the minion's
  // override first).
  wire::Value ExtPillars(wire::Value pillar) {
    const wire::Array* runs = s_.ext_pillar.array();
    if (!runs) {
      errors_.push_back("The \"ext_pillar\" option is malformed");
      spdlog::critical("{}", errors_.back());
      return pillar;
    }
    if (!override_.map()->empty()) pillar = MergeData(pillar, override_);
    std::vector<std::string> groups;
    for (const auto& [name, _] : s_.nodegroups) {
      if (Confirm(name, wire::Value(wire::Array{wire::Value::MapOf({{"match", "nodegroup"}})}))) {
        groups.push_back(name);
      }
    }
    for (const auto& run : *runs) {
      if (!run.is_map()) {
        errors_.push_back("The \"ext_pillar\" option is malformed");
        spdlog::critical("{}", errors_.back());
        return wire::Value::EmptyMap();
      }
      for (const auto& [k, args] : *run.map()) {
        const std::string name = ToText(k);
        auto source = MakeExtPillar(name, renderer_);
        if (!source) {
          spdlog::critical("Specified ext_pillar interface {} is unavailable", name);
          continue;
        }
        auto data = source->Run(req_.id, pillar, args, groups);
        if (!data.ok()) {
          errors_.push_back("Failed to load ext_pillar " + name + ": " + data.error().message);
          spdlog::error("pillar for {}: ext_pillar {}: {}", req_.id, name, data.error().message);
          continue;
        }
        if (data->is_map() && !data->map()->empty()) pillar = MergeData(pillar, *data);
      }
    }
    return pillar;
  }

  const PillarSettings& s_;
  render::Renderer& renderer_;
  const PillarRequest& req_;
  wire::Value template_pillar_ = wire::Value::EmptyMap();
  wire::Value opts_;
  Roots roots_;
  std::string pillarenv_;
  wire::Value override_;
  std::vector<std::string> errors_;
  std::vector<std::string> top_errors_;
  std::map<std::string, std::set<std::string>> ignored_;
  std::map<std::string, std::vector<std::string>> avail_;
  std::map<std::string, std::optional<wire::Value>> mods_;
};

class RendererExtPillar final : public ExtPillar {
 public:
  RendererExtPillar(std::string name, render::Renderer& r) : name_(std::move(name)), r_(r) {}
  Result<wire::Value> Run(const std::string& minion_id, const wire::Value&, const wire::Value& args,
                          const std::vector<std::string>& nodegroups) override {
    return r_.ExtPillar(name_, minion_id, args, nodegroups);
  }

 private:
  std::string name_;
  render::Renderer& r_;
};

}  // namespace

std::unique_ptr<ExtPillar> MakeExtPillar(const std::string& name, render::Renderer& renderer) {
  if (name == "cmd_yaml" || name == "cmd_json" || name == "file_tree") {
    return std::make_unique<RendererExtPillar>(name, renderer);
  }
  return nullptr;
}

PillarCompiler::PillarCompiler(PillarSettings settings, render::Renderer& renderer)
    : settings_(std::move(settings)), renderer_(renderer) {}

wire::Value PillarCompiler::Compile(const PillarRequest& request) const {
  Compilation c(settings_, renderer_, request);
  return c.Run();
}

std::vector<std::string> PillarCompiler::CheckTree() const {
  std::vector<std::string> problems;
  std::error_code ec;
  for (const auto& [env, dirs] : settings_.roots) {
    for (const auto& d : dirs) {
      for (fs::recursive_directory_iterator
               it(d, fs::directory_options::skip_permission_denied, ec),
           end;
           !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec) || it->path().extension() != ".sls") continue;
        if (auto st = renderer_.Check(it->path().string(), dirs); !st.ok()) {
          problems.push_back(it->path().string() + ": " + st.error().message);
        }
      }
    }
  }
  return problems;
}

}  // namespace halite::pillar
