// Cluster membership: who the masters of a cluster are. Two backends:
//
// files (cluster_backend: files): the configured masters, fixed at start (this master and
// cluster_peers, each named by its address). Each master writes its record to
// <cluster_pki_dir>/members/<name>.json (again when its trees change) and reads the others'
// every `period`, so cluster.status names masters that serve different trees here too. No
// joins or leaves at runtime: Leave is FailedPrecondition (edit cluster_peers and restart);
// problem() says when the record cannot be written.
//
// etcd: each master registers `<prefix>members/<name>` under a lease (ttl, renewed every
// ttl/3) holding its MemberRecord as JSON; one "membership" thread renews the lease, reads
// the member list when a "membership-watch" thread sees a change under <prefix>leave/ or
// <prefix>members/ (etcd's /v3/watch, on a client of its own; and every resync_interval), and
// tells the listener who joined, changed or left. While the watch fails it reads the list
// every `poll_interval` instead.
// A master that stops revokes its lease (it leaves at once); one that is killed leaves when
// its lease expires. While etcd cannot be reached the last known list stays as it is (peer
// links are not cut) and problem() says why; one log line per change of state.
//
// Leaving on request (cluster.leave): any host with etcd access writes a LeaveRequest at
// `<prefix>leave/<name>` (RequestLeave); master <name> sees it through its watch and calls
// its LeaveHandler once; the daemon drains its minions, then calls Leave(), which revokes the
// lease, deletes the request and stops following (the listener is told every other member
// left). A master that has left stays out until it is restarted.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "halite/cluster/etcd_client.h"
#include "halite/common/result.h"

namespace halite::cluster {

struct MemberRecord {
  std::string name;     // the master's id
  std::string address;  // where its ports listen (an IP literal)
  std::uint16_t peer_port = 0;
  std::uint16_t publish_port = 0;
  std::uint16_t ret_port = 0;
  std::uint16_t health_port = 0;
  std::string curve_public_key;  // z85, for the peer channel
  std::string version;
  std::int64_t started = 0;  // unix seconds
  // What this master serves from its own disk, one digest per tree: "file_roots/<saltenv>",
  // "pillar_roots/<saltenv>" -> 16 hex digits (daemon/tree_digests.h). Masters that differ
  // are named by cluster.status (cluster_backend: etcd keeps the trees local to each master).
  std::map<std::string, std::string> trees{};
  bool operator==(const MemberRecord&) const = default;
};

std::string MemberRecordToJson(const MemberRecord& record);
// InvalidArgument on anything but a record with a valid name, address and curve key.
Result<MemberRecord> MemberRecordFromJson(const std::string& text);

// What cluster.leave asks of a master: drain for at most `drain_timeout`, then deregister.
struct LeaveRequest {
  std::chrono::seconds drain_timeout{60};
  std::string requested_by;       // a host or master name, for the log
  std::int64_t requested_at = 0;  // unix seconds
};

class Membership {
 public:
  // Called on the membership thread: `changed` joined or changed their record, `left` are
  // names. Never includes this master. Must not block for long.
  using Listener = std::function<void(const std::vector<MemberRecord>& changed,
                                      const std::vector<std::string>& left)>;
  virtual ~Membership() = default;
  // Starts registering and watching (the first attempt is made before it returns, so a
  // failure is logged at once); never fails because etcd is down: it keeps trying.
  virtual Status Start(Listener listener) = 0;
  // Called on the membership thread, once, when a LeaveRequest for this master appears.
  // Must not block: it starts the drain elsewhere. Set before Start.
  using LeaveHandler = std::function<void(const LeaveRequest& request)>;
  virtual void SetLeaveHandler(LeaveHandler handler) = 0;
  // Deregisters for good (see above). Thread-safe; blocks for one etcd call at most (the
  // client's timeout). After an error the lease still expires on its own within its TTL.
  virtual Status Leave() = 0;
  // True once Leave() has run.
  virtual bool left() const = 0;
  // Deregisters (revokes the lease, bounded by the client's timeout) and joins the thread.
  virtual void Stop() = 0;
  // Replaces the `trees` of this master's record; the record is written again at the next
  // round when they changed (the lease and the peer links are untouched). Thread-safe.
  virtual void SetTrees(std::map<std::string, std::string> trees) = 0;
  // The members last seen, this master included once registered; sorted by name.
  virtual std::vector<MemberRecord> Members() const = 0;
  // Empty while the backend answers; otherwise why not.
  virtual std::string problem() const = 0;
};

struct FileMembershipOptions {
  MemberRecord self;
  std::filesystem::path dir;       // <cluster_pki_dir>/members
  std::vector<std::string> peers;  // the other masters' names (cluster_peers)
  std::chrono::milliseconds period{1000};
};

std::unique_ptr<Membership> MakeFileMembership(FileMembershipOptions options);

struct EtcdMembershipOptions {
  MemberRecord self;
  std::string prefix = "/halite/";  // members live under <prefix>members/
  std::chrono::seconds ttl{10};
  // How often the thread wakes to renew the lease (every ttl/3) and, while the watch is down,
  // to read the list and look for a leave request.
  std::chrono::milliseconds poll_interval{1000};
  // With the watch up, the list is read when it reports a change, and at least this often.
  std::chrono::milliseconds resync_interval{60000};
  // How long one /v3/watch call waits for a change before it is made again.
  std::chrono::milliseconds watch_wait{10000};
};

std::unique_ptr<Membership> MakeEtcdMembership(EtcdMembershipOptions options,
                                               std::unique_ptr<EtcdClient> client);

// The member records under `<prefix>members/`, sorted by name: what every master follows,
// read by the runners (cluster.members, cluster.haproxy_*). A record that is not valid, or
// whose name differs from its key, is left out and described in `ignored` (when given).
Result<std::vector<MemberRecord>> ReadMembers(EtcdClient& client, const std::string& prefix,
                                              std::vector<std::string>* ignored = nullptr);

// Writes the request at `<prefix>leave/<name>` under a lease of its drain_timeout + 60 s, so a
// request that no master acts on (it is down) goes away instead of waiting for its restart.
Status RequestLeave(EtcdClient& client, const std::string& prefix, const std::string& name,
                    const LeaveRequest& request);

std::string LeaveKey(const std::string& prefix, const std::string& name);

}  // namespace halite::cluster

namespace halite::cluster {

class PeerChannel;

// A Membership::Listener that opens and closes `channel`'s links as members join and leave
// (the peer channel of a member at tcp://<address>:<peer_port>, with its record's CURVE key).
// `channel` must outlive the membership's thread.
Membership::Listener PeerLinksFollowing(PeerChannel& channel);

}  // namespace halite::cluster
