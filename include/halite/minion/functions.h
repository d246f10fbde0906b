// Execution functions (test.*, cmd.*, grains.*, sys.*, saltutil.*) and the table the runtime
// dispatches jobs through.
//
// A function runs either on the minion's loop (kLoop: cheap, never blocks) or on the exec
// WorkerPool (kWorker: may block, must honour JobContext::deadline and ::cancelled).
// FunctionTable is immutable once built and may be shared by any number of minions and threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "halite/minion/protocol.h"
#include "halite/wire/msgpack.h"

namespace halite::minion {

// A job's call: the publish load's fun and arg, split Salt's way (load_args_and_kwargs).
struct JobCall {
  std::string jid;
  std::string fun;
  wire::Array args;    // positional
  wire::Value kwargs;  // a map: {__kwarg__: True} maps and "key=value" strings
};

// Splits a publish `arg` list into positional args and kwargs.
JobCall ParseJobCall(std::string_view jid, std::string_view fun, const wire::Value& arg);

class FunctionTable;

struct JobContext {
  std::string_view minion_id;
  const wire::Value* grains = nullptr;  // the full grains map, valid during the call
  const FunctionTable* functions = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelled = nullptr;  // set when the job timed out or the minion stops
  // kLoop functions only: the publish load (+ pid) of a running job, or an empty map.
  std::function<wire::Value(std::string_view jid)> find_job;
  // kLoop functions only: find_job's data for every other running job (saltutil.running).
  std::function<wire::Value()> running;
};

struct FunctionResult {
  JobResult result;
  // kLoop functions: hold the return back this long, on a loop timer (test.sleep); a delay
  // past the job's timeout becomes a timeout.
  std::chrono::milliseconds delay{0};
};

enum class RunOn { kLoop, kWorker };

using Function = std::function<FunctionResult(const JobCall&, const JobContext&)>;

class FunctionTable {
 public:
  struct Entry {
    RunOn run_on;
    Function fn;
  };
  void Add(std::string name, RunOn run_on, Function fn);
  const Entry* Find(std::string_view name) const;
  std::vector<std::string> Names() const;  // sorted

 private:
  std::map<std::string, Entry, std::less<>> entries_;
};

// test.ping, test.echo, test.sleep, test.version, test.arg, test.true, test.false,
// cmd.run, cmd.run_all, grains.items, grains.item, grains.get, sys.list_functions,
// saltutil.find_job.
FunctionTable BuiltinFunctions();

// Salt's result for a function the minion does not have: "'x.y' is not available.",
// success false, retcode 1, out "nested".
JobResult NotAvailable(std::string_view fun);
// What the runtime reports for a job killed at its timeout: "<fun> : Timed out after N
// seconds", retcode 1 (the shape of Salt's TimedProcTimeoutError result).
JobResult TimedOut(std::string_view what, std::chrono::milliseconds timeout);

}  // namespace halite::minion
