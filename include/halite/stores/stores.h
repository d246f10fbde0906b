// Where a master's shared state lives, as its config says: the files of a pki dir (a single
// master, or a cluster's shared cluster_pki_dir) or etcd (`cluster_backend: etcd`, issue 17).
// Every program that reads or changes minion keys (halite-master, halite-key, halite-run's
// runners, halite-api's wheel) opens them here, so they all agree on the place.
#pragma once

#include <filesystem>
#include <memory>

#include "halite/cluster/cluster_aes.h"
#include "halite/cluster/cluster_keypair.h"
#include "halite/cluster/quorum.h"
#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/keys/group_sync.h"
#include "halite/keys/key_store.h"
#include "halite/master/minion_data.h"
#include "halite/master/session_keys.h"

namespace halite::stores {

// The pki root shared by the masters: cluster_pki_dir in a cluster, pki_dir otherwise. With
// `cluster_backend: etcd` nothing shared lives there (the functions below open etcd); it is
// only where `cluster.import_to_etcd` reads a shared-folder cluster from.
std::filesystem::path SharedPkiDir(const config::MasterConfig& config);

// How to reach etcd as the config says: etcd_endpoints, and the TLS files (etcd_cacert,
// etcd_cert, etcd_key) for https endpoints.
cluster::EtcdOptions EtcdOptionsFor(const config::MasterConfig& config,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(2));

// The minion keys: in etcd under `<etcd_prefix>keys/` with `cluster_backend: etcd`, else the
// files under SharedPkiDir (Writes then leave their fsyncs to `group_sync` when given; it
// must outlive the store). Unavailable when etcd cannot be read at all.
Result<std::unique_ptr<keys::KeyStore>> OpenMinionKeys(const config::MasterConfig& config,
                                                       keys::GroupSync* group_sync = nullptr);

// The cluster AES key: in etcd at `<etcd_prefix>cluster/aes` with `cluster_backend: etcd`,
// else `.aes` under SharedPkiDir.
Result<std::unique_ptr<cluster::ClusterAesStore>> OpenClusterAes(
    const config::MasterConfig& config);

// The cluster key pair minions see as the master's: in etcd at `<etcd_prefix>cluster/keypair`
// with `cluster_backend: etcd`, else cluster.pem / cluster.pub under SharedPkiDir.
Result<std::unique_ptr<cluster::ClusterKeyPairStore>> OpenClusterKeyPair(
    const config::MasterConfig& config);

// Where the health thread's quorum views live (cluster/quorum.h): `<etcd_prefix>quorum/`, or
// <SharedPkiDir>/quorum.
Result<std::unique_ptr<cluster::QuorumViewStore>> OpenQuorumViews(
    const config::MasterConfig& config);

// The minion data cache (grains, pillar, mine) as `cache` says: the files under
// <cachedir>/minions (localfs), or the job cache's PostgreSQL database (postgres; with `feed`
// a thread keeps every minion's grains in memory, as a master needs; tools that run once pass
// false). A server that cannot be reached is not an error here.
Result<std::unique_ptr<master::MinionData>> OpenMinionData(const config::MasterConfig& config,
                                                           bool feed);

// The minions' session keys: in etcd under `<etcd_prefix>sessions/` with `cluster_backend:
// etcd`; files under <cachedir>/sessions for a cluster on a shared folder; memory on a single
// master (which adopts session files salt-master left there).
Result<std::unique_ptr<master::SessionKeys>> OpenSessionKeys(const config::MasterConfig& config,
                                                             std::size_t memory_capacity);

// Removes `id`'s session key wherever OpenSessionKeys keeps it (halite-key -d): its next
// sign-in gets a new one. Absent is fine.
Status DeleteSessionKey(const config::MasterConfig& config, const std::string& id);

}  // namespace halite::stores
