// The local client used by halite, halite-run and tests: talks to the master on this host
// over its ipc sockets in sock_dir (file permissions are the access control) and presents
// the root key from <cachedir>/.root_key, as Salt's LocalClient does; run by another user,
// that user's key from <cachedir>/.<user>_key (publisher_acl).
// Not thread-safe: one client per thread. Every call is bounded by a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "halite/client/cli_args.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::client {

struct ClientOptions {
  std::string sock_dir;
  std::string cachedir;
  std::chrono::milliseconds request_timeout{10000};
};

struct PublishRequest {
  wire::Value tgt;  // a string, or a list for tgt_type "list"
  std::string tgt_type = "glob";
  // A function name, or for a multi-function job a list of names with `arg` holding one
  // argument list per function (Salt's compound command).
  wire::Value fun;
  wire::Array arg;
  std::string jid;  // empty: the master assigns one
  std::string delimiter = ":";
  std::string ret;           // --return: returners the minions also send to
  wire::Map extra_kwargs;    // added to the load's kwargs (ret_config, metadata: as salt)
  bool show_timeout = true;  // kwargs.show_timeout (--hide-timeout clears it), as salt sends
  // The caller's timeout, sent as the publish's `to` (as Salt's LocalClient does for a
  // syndic): the masters keep the job for replay to minions that reconnect that long.
  std::optional<std::chrono::seconds> timeout;
  // An eauth token (halite-api): the master then checks the token's user's external_auth ACL
  // instead of the root key, and publishes as that user.
  std::string token;
};

struct PublishReply {
  std::string jid;
  std::vector<std::string> minions;
  std::vector<std::string> missing;
};

struct MinionReturn;
// A return event's or a job cache entry's data as a MinionReturn (id, return, retcode,
// success, out).
MinionReturn MinionReturnFromData(const wire::Value& data);

struct MinionReturn {
  std::string id;
  wire::Value ret;
  std::optional<std::int64_t> retcode;
  std::optional<bool> success;
  std::string out;
};

// Reads a job's returns straight from the job cache (the CLI opens the master's configured
// backend itself), for when the master stops answering in the middle of a wait.
using JobCacheReader = std::function<Result<std::vector<MinionReturn>>(const std::string& jid)>;

struct WaitOptions {
  std::chrono::milliseconds timeout{5000};          // Salt's -t: wait this long past the last news
  std::chrono::milliseconds gather_timeout{10000};  // cap on find_job extensions
  bool find_job = true;  // ask silent minions whether the job still runs (saltutil.find_job)
  std::function<void(std::size_t returned, std::size_t expected)> progress;
};

class LocalClient {
 public:
  static Result<std::unique_ptr<LocalClient>> Connect(const ClientOptions& options);
  ~LocalClient();

  // A clear request with the root key added; the reply's `load` map, or the error it carried.
  Result<wire::Value> Call(wire::Value load);
  // Subscribes to the event bus and proves the subscription is live (a probe event echoes
  // back), so no event fired after this returns can be missed. `prefixes`: the tags wanted
  // ("" for every event).
  Status SubscribeEvents(const std::vector<std::string>& prefixes = {"salt/job/"});
  Result<PublishReply> Publish(const PublishRequest& request);
  // Streams `salt/job/<jid>/ret/<id>` events until every expected minion answered or the
  // timeout passed (extended while minions report the job still running). Whenever no event
  // has come for a second it also looks the job up in the job cache (backing off to every
  // 5 s), and once more at the end, so a return whose event never reached this master (a cut
  // peer link, a master that died after storing it) is still reported, as soon as it is
  // stored. `on_return` runs once per minion. Returns the ids that never answered.
  // If the master stops answering and a JobCacheReader is set, the wait carries on from the
  // job cache alone (polled every second until the timeout; no find_job), with one line on
  // `notice`; without a reader it ends there.
  Result<std::vector<std::string>> WaitForReturns(
      const PublishReply& job, const WaitOptions& options,
      const std::function<void(const MinionReturn&)>& on_return);
  // The next event on the bus (SubscribeEvents first), or nullopt when none came within
  // `wait`; for callers that follow several jobs at once (Batch).
  Result<std::optional<std::pair<std::string, wire::Value>>> NextEvent(
      std::chrono::milliseconds wait);
  // jobs.lookup_jid through the master.
  Result<wire::Value> LookupJid(const std::string& jid);
  Result<wire::Value> ListJobs();

  void SetJobCacheReader(JobCacheReader reader, std::function<void(const std::string&)> notice) {
    job_cache_reader_ = std::move(reader);
    notice_ = std::move(notice);
  }

 private:
  LocalClient() = default;
  Result<wire::Value> Request(const wire::Value& load);
  void ResetRequestSocket();

  ClientOptions options_;
  std::string root_key_;       // the key this user presents (root's, or a publisher_acl user's)
  std::string user_ = "root";  // the publish's "user": who runs this process
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> req_;
  std::unique_ptr<zmq::socket_t> sub_;
  JobCacheReader job_cache_reader_;
  std::function<void(const std::string&)> notice_;
};

}  // namespace halite::client
