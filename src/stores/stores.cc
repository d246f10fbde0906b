#include "halite/stores/stores.h"

#include "halite/cluster/etcd_client.h"
#include "halite/cluster/etcd_key_store.h"
#include "halite/keys/fs_key_store.h"
#ifdef HALITE_WITH_POSTGRES
#include "halite/jobs/postgres_job_cache.h"
#include "halite/stores/postgres_minion_data.h"
#endif
#include "halite/stores/etcd_session_keys.h"

namespace halite::stores {

cluster::EtcdOptions EtcdOptionsFor(const config::MasterConfig& config,
                                    std::chrono::milliseconds timeout) {
  return {config.etcd_endpoints, timeout, config.etcd_cacert, config.etcd_cert, config.etcd_key};
}

std::filesystem::path SharedPkiDir(const config::MasterConfig& config) {
  return config.cluster_id.empty() || config.cluster_pki_dir.empty() ? config.pki_dir
                                                                     : config.cluster_pki_dir;
}

Result<std::unique_ptr<keys::KeyStore>> OpenMinionKeys(const config::MasterConfig& config,
                                                       keys::GroupSync* group_sync) {
  if (config.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(config)));
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
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(config)));
    return cluster::MakeEtcdClusterAes(std::move(client), config.etcd_prefix + "cluster/aes");
  }
  return cluster::MakeFileClusterAes(SharedPkiDir(config));
}

Result<std::unique_ptr<cluster::ClusterKeyPairStore>> OpenClusterKeyPair(
    const config::MasterConfig& config) {
  if (config.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(config)));
    return cluster::MakeEtcdClusterKeyPair(std::move(client),
                                           config.etcd_prefix + "cluster/keypair");
  }
  return cluster::MakeFileClusterKeyPair(SharedPkiDir(config));
}

Result<std::unique_ptr<cluster::QuorumViewStore>> OpenQuorumViews(
    const config::MasterConfig& config) {
  if (config.cluster_backend == "etcd") {
    // A health round waits on it: a short deadline, so an etcd that does not answer costs a
    // round little (and the round then decides nothing, as with an unreadable folder).
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(
                                             config, std::chrono::milliseconds(300))));
    return cluster::MakeEtcdQuorumViews(std::move(client), config.etcd_prefix + "quorum/");
  }
  return cluster::MakeFileQuorumViews(SharedPkiDir(config) / "quorum");
}

Result<std::unique_ptr<master::MinionData>> OpenMinionData(const config::MasterConfig& config,
                                                           bool feed) {
  if (config.cache != config::kCachePostgres) {
    return std::unique_ptr<master::MinionData>(
        std::make_unique<master::FileMinionData>(config.cachedir));
  }
#ifdef HALITE_WITH_POSTGRES
  // The job cache's database and schema (config checks that master_job_cache is postgres).
  HALITE_ASSIGN_OR_RETURN(jobs::PostgresJobCacheOptions job_cache,
                          jobs::ParsePostgresJobCacheOptions(
                              jobs::JobCacheContext{config.cachedir, config.id}, config.job_cache));
  PostgresMinionDataOptions options;
  options.dsn = job_cache.dsn;
  options.schema = job_cache.schema;
  options.master_id = config.id;
  options.connect_timeout = job_cache.connect_timeout;
  if (!feed) options.feed_period = std::chrono::milliseconds(0);
  HALITE_ASSIGN_OR_RETURN(auto store, PostgresMinionData::Open(std::move(options)));
  return std::unique_ptr<master::MinionData>(std::move(store));
#else
  (void)feed;
  return Error::FailedPrecondition("cache: postgres: this build has no PostgreSQL support");
#endif
}

Result<std::unique_ptr<master::SessionKeys>> OpenSessionKeys(const config::MasterConfig& config,
                                                             std::size_t memory_capacity) {
  const std::filesystem::path dir = std::filesystem::path(config.cachedir) / "sessions";
  const std::chrono::seconds lifetime = config.publish_session;
  if (config.cluster_id.empty()) {
    return master::MakeMemorySessionKeys(lifetime, memory_capacity, dir);
  }
  if (config.cluster_backend == "etcd") {
    // Sign-ins run on several worker threads; an EtcdClient serves one call at a time.
    std::vector<std::unique_ptr<cluster::EtcdClient>> clients;
    for (int i = 0; i < 4; ++i) {
      HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(config)));
      clients.push_back(std::move(client));
    }
    return MakeEtcdSessionKeys(std::move(clients), config.etcd_prefix + "sessions/", lifetime);
  }
  return master::MakeFileSessionKeys(dir, lifetime);
}

Status DeleteSessionKey(const config::MasterConfig& config, const std::string& id) {
  if (!config.cluster_id.empty() && config.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto client, cluster::MakeEtcdClient(EtcdOptionsFor(config)));
    return client->Delete(config.etcd_prefix + "sessions/" + id);
  }
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(config.cachedir) / "sessions" / id, ec);
  if (ec) return Error::Unavailable("cannot remove the session key of " + id + ": " + ec.message());
  return OkStatus();
}

}  // namespace halite::stores
