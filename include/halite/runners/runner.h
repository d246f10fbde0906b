// Salt's runners as halite-run (salt-run) runs them: one explicit table of functions, each
// with its parameters as Salt's Python signature declares them, its doc text and its code.
// A runner returns the value salt-run would print; the caller picks the outputter (print.h).
// Not thread-safe: halite-run calls one runner from main.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/client/local_client.h"
#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/wire/msgpack.h"

namespace halite::runners {

// What a runner may reach. Runners that read local state (the minion data cache, file_roots,
// the key directory: halite-run runs on a master, with the master's config) never call
// `master`, so they work with no master up, as Salt's do.
struct RunnerEnv {
  const config::MasterConfig* config = nullptr;
  // The local master over its request socket, connected on first use; the error says why not
  // (no .root_key, no socket).
  std::function<Result<client::LocalClient*>()> master;
  std::chrono::seconds timeout{5};  // salt-run's -t, or the config's timeout
  // display_progress=True: one progress message (salt-run prints it as an event).
  std::function<void(const std::string& message)> progress;
};

// A parameter of a runner's Python signature: positional words fill them in order, key=value
// words by name. No default: required.
struct Param {
  std::string name;
  std::optional<wire::Value> fallback;  // the default; nullopt: required
};

// The arguments bound to a runner's parameters, as Python binds a call.
class BoundArgs {
 public:
  // The value of a parameter (its default when not given).
  const wire::Value& Get(std::string_view name) const;
  // Get as text: a string as it is, another scalar as Salt's str() would print it; empty for
  // nil.
  std::string Text(std::string_view name) const;
  bool Truthy(std::string_view name) const { return Get(name).Truthy(); }
  // Keyword arguments no parameter named (only runners that take **kwargs get any).
  const wire::Value& extra_kwargs() const { return extra_; }

 private:
  friend Result<BoundArgs> Bind(std::string_view, const std::vector<Param>&, bool,
                                const wire::Array&);
  std::map<std::string, wire::Value, std::less<>> values_;
  wire::Value extra_ = wire::Value::EmptyMap();
};

// A runner's value and, when it names one (lookup_jid of a highstate job), its outputter.
struct RunnerResult {
  wire::Value data;
  std::string outputter;
};

using RunnerFn = std::function<Result<RunnerResult>(RunnerEnv&, const BoundArgs&)>;

struct Runner {
  std::string name;  // "jobs.lookup_jid"
  std::vector<Param> params;
  bool takes_kwargs = false;  // Python's **kwargs
  std::string doc;            // the text `halite-run -d` prints under the name
  RunnerFn fn;
};

// Error::InvalidArgument with Python's TypeError text ("lookup_jid() missing 1 required
// positional argument: 'jid'") when `args` (parse_input's output: positional values, then an
// optional {"__kwarg__": true, ...} map) do not fit `params`.
Result<BoundArgs> Bind(std::string_view function, const std::vector<Param>& params,
                       bool takes_kwargs, const wire::Array& args);

class RunnerTable {
 public:
  void Add(Runner runner);
  const Runner* Find(std::string_view name) const;
  // Salt's get_docs: every runner (empty `arg`), those of one module ("jobs" or "jobs."), the
  // one named, or those a glob with '*' matches; sorted by name.
  std::vector<const Runner*> Docs(std::string_view arg) const;

 private:
  std::map<std::string, Runner, std::less<>> runners_;
};

// The whole list, explicitly (no self-registration): jobs, manage, cache, fileserver, cluster.
RunnerTable BuiltinRunners();
void AddJobsRunners(RunnerTable& table);
void AddManageRunners(RunnerTable& table);
void AddCacheRunners(RunnerTable& table);
void AddFileserverRunners(RunnerTable& table);
void AddClusterRunners(RunnerTable& table);

}  // namespace halite::runners
