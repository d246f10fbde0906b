#include "halite/stores/stores.h"

#include "halite/cluster/etcd_client.h"
#include "halite/cluster/etcd_key_store.h"
#include "halite/keys/fs_key_store.h"

namespace halite::stores {

std::filesystem::path SharedPkiDir(const config::MasterConfig& config) {
  return config.cluster_id.empty() || config.cluster_pki_dir.empty() ? config.pki_dir
                                                                     : config.cluster_pki_dir;
}

Result<std::unique_ptr<keys::KeyStore>> OpenMinionKeys(const config::MasterConfig& config,
                                                       keys::GroupSync* group_sync) {
  if (config.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient({config.etcd_endpoints}));
    HALITE_ASSIGN_OR_RETURN(
        auto store, cluster::EtcdKeyStore::Open(std::move(client), {config.etcd_prefix + "keys/"}));
    return std::unique_ptr<keys::KeyStore>(std::move(store));
  }
  HALITE_ASSIGN_OR_RETURN(auto store, keys::FsKeyStore::Open(SharedPkiDir(config), group_sync));
  return std::unique_ptr<keys::KeyStore>(std::move(store));
}

Result<std::unique_ptr<cluster::ClusterAesStore>> OpenClusterAes(
    const config::MasterConfig& config) {
  if (config.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient({config.etcd_endpoints}));
    return cluster::MakeEtcdClusterAes(std::move(client), config.etcd_prefix + "cluster/aes");
  }
  return cluster::MakeFileClusterAes(SharedPkiDir(config));
}

}  // namespace halite::stores
