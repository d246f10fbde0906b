#pragma once
// publish.runner on the master (master/peer.h): halite's runner table, run for a minion that
// `peer_run:` allows, on the worker that took its request. Runners that need the master reach
// it over its own request socket in sock_dir with the root key, as halite-run does. At most
// max(1, worker_threads / 2) run at once, since one may hold its worker for its whole timeout
// (manage.up waits for test.ping); more are answered with a message. Thread-safe.

#include <functional>
#include <string>

#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/wire/msgpack.h"

namespace halite::daemon {

using PeerRunnerFn = std::function<Result<wire::Value>(
    const std::string& fun, const wire::Array& args, const std::string& requester)>;

// `config` is copied: sock_dir, cachedir and timeout as the master started with them.
PeerRunnerFn MakePeerRunner(const config::MasterConfig& config);

}  // namespace halite::daemon
