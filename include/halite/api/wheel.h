// Salt's wheel functions that web UIs call (salt/wheel/key.py, config.py), on the same key
// store and key actions halite-key uses: key.list_all, key.list, key.accept, key.reject,
// key.delete, key.finger, config.values, minions.connected. Each accept / reject / delete fires
// salt-key's salt/key event through the master (`fire`). Thread-safe; blocks on disk.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/wire/msgpack.h"

namespace halite::api {

struct WheelEnv {
  const config::MasterConfig* config = nullptr;
  // salt/key events ({"result", "act", "id"}) for the master to fire; may be empty.
  std::function<void(const wire::Array& events)> fire_key_events;
  // minions.connected: the sorted list of ids the master sees now (manage.present's answer);
  // empty: the function answers an error.
  std::function<Result<wire::Value>()> connected_ids;
};

// The function's names, for `netapi` errors.
bool IsWheelFunction(std::string_view fun);
// Runs `fun` with keyword arguments `kwargs` (a map; positional `arg` already bound: the
// first one is `match`). Error::InvalidArgument for an unknown function or missing `match`.
Result<wire::Value> RunWheel(const WheelEnv& env, std::string_view fun, const wire::Array& arg,
                             const wire::Value& kwargs);

}  // namespace halite::api
