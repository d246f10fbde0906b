// publish.runner's runners (include/halite/daemon/peer_runner.h).
#include "halite/daemon/peer_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "halite/client/local_client.h"
#include "halite/runners/runner.h"

namespace halite::daemon {

namespace {

struct PeerRunnerState {
  config::MasterConfig config;
  runners::RunnerTable table = runners::BuiltinRunners();
  int max_running = 1;
  std::atomic<int> running{0};
};

Result<wire::Value> RunOne(PeerRunnerState& state, const std::string& fun,
                           const wire::Array& args) {
  const runners::Runner* runner = state.table.Find(fun);
  // Salt's texts, handed back to the minion as the runner's value.
  if (!runner) return wire::Value("'" + fun + "' is not available.");
  auto bound = runners::Bind(fun, runner->params, runner->takes_kwargs, args);
  if (!bound.ok()) return wire::Value("Passed invalid arguments: " + bound.error().message);
  std::unique_ptr<client::LocalClient> local;
  runners::RunnerEnv env;
  env.config = &state.config;
  env.timeout = state.config.timeout;
  env.master = [&]() -> Result<client::LocalClient*> {
    if (!local) {
      HALITE_ASSIGN_OR_RETURN(
          local, client::LocalClient::Connect({state.config.sock_dir, state.config.cachedir,
                                               std::chrono::milliseconds(10000)}));
    }
    return local.get();
  };
  env.progress = [](const std::string&) {};  // display_progress has no one to show it to
  HALITE_ASSIGN_OR_RETURN(runners::RunnerResult result, runner->fn(env, *bound));
  return std::move(result.data);
}

}  // namespace

PeerRunnerFn MakePeerRunner(const config::MasterConfig& config) {
  auto state = std::make_shared<PeerRunnerState>();
  state->config = config;
  state->max_running = std::max(1, config.worker_threads / 2);
  return [state](const std::string& fun, const wire::Array& args,
                 const std::string& requester) -> Result<wire::Value> {
    if (state->running.fetch_add(1) >= state->max_running) {
      state->running.fetch_sub(1);
      spdlog::warn("publish.runner {} from '{}' refused: {} runners already running", fun,
                   requester, state->max_running);
      return Error::ResourceExhausted("the master is busy with other minions' runners; retry");
    }
    auto result = RunOne(*state, fun, args);
    state->running.fetch_sub(1);
    return result;
  };
}

}  // namespace halite::daemon
