#include "halite/api/wheel.h"

#include <filesystem>

#include "halite/keys/key_admin.h"
#include "halite/master/minion_data.h"
#include "halite/stores/stores.h"
#include "halite/wire/glob.h"
#include "halite/wire/keyed_map.h"

namespace halite::api {

namespace {

using keys::KeyState;

constexpr KeyState kStates[] = {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected,
                                KeyState::kDenied};

std::string_view StateKey(KeyState s) { return keys::KeyStateDir(s); }

// salt-key's name_match: a glob, a comma-separated list of globs, or a list of them.
std::vector<std::string> Globs(const wire::Value& match) {
  std::vector<std::string> out;
  auto add = [&](const std::string& text) {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t comma = std::min(text.find(',', start), text.size());
      out.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
  };
  if (const std::string* s = match.str()) add(*s);
  if (const wire::Array* a = match.array()) {
    for (const auto& v : *a) {
      if (v.str()) add(*v.str());
    }
  }
  return out;
}

bool Truthy(const wire::Value& kwargs, std::string_view key) {
  const wire::Value* v = kwargs.Find(key);
  return v && v->Truthy();
}

class KeyWheel {
 public:
  explicit KeyWheel(const WheelEnv& env) : env_(env) {}

  Status Open() {
    HALITE_ASSIGN_OR_RETURN(store_, stores::OpenMinionKeys(*env_.config));
    return OkStatus();
  }

  Result<std::vector<std::string>> Matching(KeyState state, const std::vector<std::string>& globs) {
    HALITE_ASSIGN_OR_RETURN(auto ids, store_->List(state));
    std::vector<std::string> out;
    for (const auto& id : ids) {
      for (const auto& g : globs) {
        if (wire::GlobMatch(g, id)) {
          out.push_back(id);
          break;
        }
      }
    }
    return out;
  }

  Result<wire::Value> ListAll() {
    wire::Value out = wire::Value::MapOf(
        {{"local",
          wire::Value(wire::Array{wire::Value("master.pem"), wire::Value("master.pub")})}});
    for (KeyState s :
         {KeyState::kAccepted, KeyState::kDenied, KeyState::kPending, KeyState::kRejected}) {
      HALITE_ASSIGN_OR_RETURN(auto ids, store_->List(s));
      wire::Array a;
      for (auto& id : ids) a.emplace_back(id);
      out.Set(StateKey(s), wire::Value(std::move(a)));
    }
    return out;
  }

  Result<wire::Value> Finger(const std::vector<std::string>& globs) {
    wire::Value out = wire::Value::EmptyMap();
    for (KeyState s : kStates) {
      HALITE_ASSIGN_OR_RETURN(auto ids, Matching(s, globs));
      if (ids.empty()) continue;
      wire::KeyedMap m;  // thousands of keys: not a search of the ids before each
      for (const auto& id : ids) {
        auto pem = store_->Read(s, id);
        auto f = pem.ok() ? keys::Fingerprint(*pem) : Result<std::string>(pem.error());
        m.Set(id, f.ok() ? *f : f.error().message);
      }
      out.Set(StateKey(s), wire::Value(std::move(m).Take()));
    }
    return out;
  }

  // Moves the matching keys of `from` to `to` (or deletes them when `to` is empty) and fires
  // `act` for each; the answer lists them under their new state, as salt-key's wheel does.
  Result<wire::Value> Act(const std::vector<std::string>& globs, const std::vector<KeyState>& from,
                          std::optional<KeyState> to, const char* act) {
    wire::Array events;
    wire::Array done;
    for (KeyState s : from) {
      HALITE_ASSIGN_OR_RETURN(auto ids, Matching(s, globs));
      for (const auto& id : ids) {
        Status st = to ? keys::MoveKey(*store_, id, s, *to) : keys::Delete(*store_, id);
        if (!st.ok()) return st.error();
        done.emplace_back(id);
        events.push_back(wire::Value::MapOf({{"result", true}, {"act", act}, {"id", id}}));
      }
    }
    if (!events.empty() && env_.fire_key_events) env_.fire_key_events(events);
    if ((!to || *to == KeyState::kRejected) && !done.empty() && env_.config->rotate_aes_key) {
      (void)keys::WriteDropFile(env_.config->cachedir, env_.config->id);
    }
    wire::Value out = wire::Value::EmptyMap();
    if (!done.empty()) out.Set(to ? StateKey(*to) : "minions", wire::Value(std::move(done)));
    return out;
  }

 private:
  const WheelEnv& env_;
  std::unique_ptr<keys::KeyStore> store_;
};

constexpr std::string_view kFunctions[] = {"key.list_all",  "key.list",         "key.accept",
                                           "key.reject",    "key.delete",       "key.finger",
                                           "config.values", "minions.connected"};

}  // namespace

bool IsWheelFunction(std::string_view fun) {
  for (auto f : kFunctions) {
    if (f == fun) return true;
  }
  return false;
}

Result<wire::Value> RunWheel(const WheelEnv& env, std::string_view fun, const wire::Array& arg,
                             const wire::Value& kwargs) {
  if (!IsWheelFunction(fun)) {
    return Error::InvalidArgument("'" + std::string(fun) + "' is not available.");
  }
  if (fun == "config.values") {
    return env.config->source.IsDefined() ? master::YamlNodeToValue(env.config->source)
                                          : wire::Value::EmptyMap();
  }
  if (fun == "minions.connected") {
    // Salt's wheel.minions.connected: a list of ids. halite's presence is by identity
    // (master/presence.h, docs/cli.md "Presence"), not by source address.
    if (!env.connected_ids) return Error::Unavailable("minions.connected: no master to ask");
    return env.connected_ids();
  }
  KeyWheel wheel(env);
  HALITE_RETURN_IF_ERROR(wheel.Open());
  if (fun == "key.list_all") return wheel.ListAll();
  const wire::Value* match = kwargs.Find(fun == "key.list" ? "match" : "match");
  wire::Value positional = arg.empty() ? wire::Value() : arg.front();
  if (!match) match = &positional;
  if (match->is_nil()) {
    return Error::InvalidArgument(std::string(fun) +
                                  "() missing 1 required positional argument: 'match'");
  }
  if (fun == "key.list") {
    // key.list(match): match names a state (acc, pre, un, rej, den, all).
    const std::string* state = match->str();
    HALITE_ASSIGN_OR_RETURN(wire::Value all, wheel.ListAll());
    if (!state) return Error::InvalidArgument("key.list: match names a key state");
    std::string s = *state;
    if (s == "all") return all;
    std::string_view dir = s.rfind("acc", 0) == 0                ? "minions"
                           : s == "pre" || s.rfind("un", 0) == 0 ? "minions_pre"
                           : s.rfind("rej", 0) == 0              ? "minions_rejected"
                           : s.rfind("den", 0) == 0              ? "minions_denied"
                                                                 : "";
    if (dir.empty()) return Error::InvalidArgument("key.list: unknown key state '" + s + "'");
    return wire::Value::MapOf({{dir, *all.Find(dir)}});
  }
  const std::vector<std::string> globs = Globs(*match);
  if (fun == "key.finger") return wheel.Finger(globs);
  if (fun == "key.accept") {
    std::vector<KeyState> from{KeyState::kPending};
    if (Truthy(kwargs, "include_rejected")) from.push_back(KeyState::kRejected);
    if (Truthy(kwargs, "include_denied")) from.push_back(KeyState::kDenied);
    return wheel.Act(globs, from, KeyState::kAccepted, "accept");
  }
  if (fun == "key.reject") {
    std::vector<KeyState> from{KeyState::kPending};
    if (Truthy(kwargs, "include_accepted")) from.push_back(KeyState::kAccepted);
    if (Truthy(kwargs, "include_denied")) from.push_back(KeyState::kDenied);
    return wheel.Act(globs, from, KeyState::kRejected, "reject");
  }
  return wheel.Act(
      globs, {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied},
      std::nullopt, "delete");
}

}  // namespace halite::api
