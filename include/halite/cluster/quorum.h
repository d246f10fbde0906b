// Which side of a cut between masters keeps serving (issue 16, docs/failure-modes.md).
//
// The masters of a cluster reach each other over the peer channel, and each of them reaches
// the shared storage, HAProxy and the minions on its own. When links between masters fail
// while the storage stays reachable, the cluster splits into sides that cannot forward
// publishes or events to each other. Jobs still reach every minion through the storage scan,
// but the operator's view and the events are split, so the minions should gather on one side:
// a master outside the winning side reports it on /health and HAProxy moves its minions away.
//
// Each master writes a view each health round (a counter that moves, and the peers its links
// reach) to shared storage and reads the others'. A master is alive while its counter keeps
// moving (seen by the reader's own clock, so no clocks are compared); a dead or frozen master
// is not a side, which is why a kill never takes the survivors out. Among the alive masters,
// two are on one side when either reports a link to the other; the sides are the connected
// groups. The largest side serves; between sides of one size the one holding the lowest id
// (byte order) serves. So with two masters cut apart, the lower id keeps serving and the other
// reports a partition; with three, the two that still reach each other serve.
//
// A master that cannot read the views (its storage is gone) decides nothing here: only its
// links count, every peer it cannot reach is taken as dead, and it keeps serving (its storage
// problem is already on /health).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halite/cluster/etcd_client.h"
#include "halite/common/result.h"

namespace halite::cluster {

struct QuorumView {
  std::string id;
  std::uint64_t seq = 0;               // moves every round while the master runs
  std::vector<std::string> reachable;  // peers whose link is connected now
  // Its job cache answered its last check. When every alive master's does not (a PostgreSQL
  // outage they share), moving minions helps nobody: /health stays 200 and says "degraded".
  bool job_cache_ok = true;
  bool operator==(const QuorumView&) const = default;
};

// One line: "<seq> <peer>,<peer>,...\n", with " job-cache-down" before the newline when
// job_cache_ok is false. InvalidArgument on anything else.
std::string QuorumViewToText(const QuorumView& view);
Result<QuorumView> QuorumViewFromText(std::string_view id, std::string_view text);

// Writes this master's view to <dir>/<id> (atomic rename, not synced: a heartbeat).
Status WriteQuorumView(const std::filesystem::path& dir, const QuorumView& view);
// The views of `ids` found in <dir>; a missing or unreadable one is left out. Unavailable when
// the directory itself cannot be read.
Result<std::vector<QuorumView>> ReadQuorumViews(const std::filesystem::path& dir,
                                                const std::vector<std::string>& ids);

// Where the views live: files in <cluster_pki_dir>/quorum (the functions above), or etcd keys
// `<prefix>quorum/<id>` (cluster_backend: etcd, where there is no shared folder). Either way a
// round writes one view and reads the others'; Read is Unavailable when the store cannot be
// read at all (then the round decides nothing). Not thread-safe: the health thread owns it.
class QuorumViewStore {
 public:
  virtual ~QuorumViewStore() = default;
  virtual Status Write(const QuorumView& view) = 0;
  virtual Result<std::vector<QuorumView>> Read(const std::vector<std::string>& ids) = 0;
};
std::unique_ptr<QuorumViewStore> MakeFileQuorumViews(std::filesystem::path dir);
// `prefix`: e.g. "/halite/quorum/". The client should have a short timeout: a round waits on it.
std::unique_ptr<QuorumViewStore> MakeEtcdQuorumViews(std::unique_ptr<EtcdClient> client,
                                                     std::string prefix);

struct QuorumDecision {
  bool serving = true;
  std::vector<std::string> side;            // this master's side, sorted, self included
  std::vector<std::string> winner;          // the side that serves, sorted
  std::vector<std::string> alive;           // every master taken as alive, sorted
  std::vector<std::string> job_cache_down;  // the alive masters whose job cache is down, sorted
};

// The rule above, for one round. `self_reachable`: peers this master's links reach now;
// `alive_views`: the views of the other masters taken as alive (self's own is ignored).
QuorumDecision DecideQuorum(std::string_view self_id,
                            const std::vector<std::string>& self_reachable,
                            const std::vector<QuorumView>& alive_views,
                            bool self_job_cache_ok = true);

// Keeps, across rounds, when each peer's counter last moved, and applies a grace period:
// a master reports that it is out of the serving side only after every round for `grace`
// said so, and serves again at the first round that says it should (a blip of a link never
// moves minions). Not thread-safe: one health thread owns it.
class QuorumTracker {
 public:
  struct Options {
    // A counter still this long: that master is down (4 health rounds; room for a shared
    // folder's attribute cache).
    std::chrono::milliseconds stale{4000};
    // Longer than `stale`: when a peer dies, the survivors stop counting it before they could
    // report themselves out (with two masters, killing the lower id must never take the other
    // out of HAProxy too).
    std::chrono::milliseconds grace{6000};
  };
  QuorumTracker(std::string self_id, Options options);

  // One round: the views read now (or none when storage could not be read), the peers this
  // master's links reach, the time.
  QuorumDecision Observe(const std::vector<QuorumView>& views,
                         const std::vector<std::string>& self_reachable,
                         std::chrono::steady_clock::time_point now, bool self_job_cache_ok = true);

 private:
  struct Seen {
    std::uint64_t seq = 0;
    std::chrono::steady_clock::time_point moved;
  };
  std::string self_;
  Options options_;
  std::map<std::string, Seen> seen_;
  std::chrono::steady_clock::time_point out_since_{};
  bool out_ = false;
};

// "partitioned: ..." for /health when `d` does not serve, naming the sides.
std::string QuorumProblem(const QuorumDecision& d);

}  // namespace halite::cluster
