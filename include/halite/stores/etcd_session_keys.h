// Session keys (master::SessionKeys, salt-wire 4.6) in etcd, for clusters without a shared
// folder (cluster_backend: etcd): one key `<prefix><minion id>` holding {"key", "stamp",
// "made"}, where "stamp" names the accepted minion key the session was made for (the etcd
// key store's stamps are etcd revisions, the same on every master). Each master keeps what it
// read in memory, so a request costs no etcd round trip once its minion's session is known
// here; a sign-in (or the first request a master sees from a minion that moved to it) reads
// etcd, and makes a key when there is none, it is expired, or it was made for another
// accepted key: created or replaced by compare-and-swap, so two masters never hand one minion
// two keys (the loser reads the winner's). Forget drops the copy; the next Get reads etcd
// again (another master may have renewed it). Without etcd, a minion this master has no
// session for (one that moved here) still signs in: it gets a key of this master's own
// (logged once), and a sign-in more if it moves again before etcd is back.
// Thread-safe: a small pool of clients serves the worker threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "halite/cluster/etcd_client.h"
#include "halite/master/session_keys.h"

namespace halite::stores {

// `clients`: at least one; `prefix`: e.g. "/halite/sessions/".
std::unique_ptr<master::SessionKeys> MakeEtcdSessionKeys(
    std::vector<std::unique_ptr<cluster::EtcdClient>> clients, std::string prefix,
    std::chrono::seconds lifetime);

}  // namespace halite::stores
