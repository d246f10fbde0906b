// Salt's batch mode (salt/cli/batch.py, `salt -b N|N%`): ping the target, then run the job on
// at most N of the minions that answered at a time, publishing to the next minion as soon as
// one returns (a sliding window, not fixed groups), each group as its own job.
// Not thread-safe; runs on the caller's thread, over the caller's LocalClient.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/client/local_client.h"
#include "halite/common/result.h"

namespace halite::client {

struct BatchOptions {
  std::string size;                   // -b: "N", "N%" (of the minions that answered the ping), "%N"
  std::chrono::milliseconds wait{0};  // --batch-wait: a slot stays closed this long after a return
  bool failhard = false;              // --failhard: stop at the first return with a retcode > 0
  std::chrono::milliseconds timeout{5000};          // -t, for the ping and each group
  std::chrono::milliseconds gather_timeout{10000};  // gather_job_timeout (find_job)
};

// What a batch run reports, in Salt's order. `say` gets Salt's lines for stdout ("Executing run
// on [...]", the minions that did not answer the ping); `returned` one minion's return as
// Salt's batch displays it, {"retcode": rc, "jid": jid, id: return} (retcode only when the
// minion sent one; {id: {}} for a minion of a group that never returned); `error` the line
// Salt logs on stderr when --failhard stops the run.
struct BatchSink {
  std::function<void(const std::string& line)> say;
  std::function<void(const MinionReturn& r, const wire::Value& display)> returned;
  std::function<void(const std::string& line)> error;
};

class Batch {
 public:
  // `job` is the whole job (target, function, arguments, returners); `client` must be
  // subscribed to events (SubscribeEvents) and outlive the Batch.
  Batch(LocalClient& client, PublishRequest job, BatchOptions options);

  // Runs the batch; the highest retcode of any return (salt's exit code in batch mode), 0
  // when nothing matched. Error::InvalidArgument for a size Salt cannot read (with Salt's
  // message), the client's errors for a master that does not answer.
  Result<int> Run(const BatchSink& sink);

  // Salt's get_bnum: how many minions run at once out of `minions`.
  static Result<std::size_t> WindowSize(std::string_view size, std::size_t minions);

 private:
  LocalClient& client_;
  PublishRequest job_;
  BatchOptions options_;
};

}  // namespace halite::client
