// Where a master's shared state lives, as its config says: the files of a pki dir (a single
// master, or a cluster's shared cluster_pki_dir) or etcd (`cluster_backend: etcd`, issue 17).
// Every program that reads or changes minion keys (halite-master, halite-key, halite-run's
// runners, halite-api's wheel) opens them here, so they all agree on the place.
#pragma once

#include <filesystem>
#include <memory>

#include "halite/cluster/cluster_aes.h"
#include "halite/common/result.h"
#include "halite/config/master_config.h"
#include "halite/keys/group_sync.h"
#include "halite/keys/key_store.h"

namespace halite::stores {

// The pki root shared by the masters: cluster_pki_dir in a cluster, pki_dir otherwise. It
// still holds the cluster keys and .aes in etcd mode (not yet in etcd).
std::filesystem::path SharedPkiDir(const config::MasterConfig& config);

// The minion keys: in etcd under `<etcd_prefix>keys/` with `cluster_backend: etcd`, else the
// files under SharedPkiDir (Writes then leave their fsyncs to `group_sync` when given; it
// must outlive the store). Unavailable when etcd cannot be read at all.
Result<std::unique_ptr<keys::KeyStore>> OpenMinionKeys(const config::MasterConfig& config,
                                                       keys::GroupSync* group_sync = nullptr);

// The cluster AES key: in etcd at `<etcd_prefix>cluster/aes` with `cluster_backend: etcd`,
// else `.aes` under SharedPkiDir.
Result<std::unique_ptr<cluster::ClusterAesStore>> OpenClusterAes(
    const config::MasterConfig& config);

}  // namespace halite::stores
