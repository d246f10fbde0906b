// ClusterKeyPairStore: where the masters of a cluster keep the RSA key pair every minion sees
// as "the master" (salt-wire 10.3: all masters sign with it and hand out its public half, so
// a minion's pinned minion_master.pub fits every one of them). Two backends, a factory each:
// - files: cluster.pem / cluster.pub in cluster_pki_dir (keys::LoadOrCreateKeyPair);
// - etcd: one key `<prefix>cluster/keypair` holding {"pem", "pub", "made", "by"}, created with
//   a compare-and-swap on "absent": masters starting at the same instant on an empty prefix
//   agree on the first writer's pair. The public text is kept verbatim (an imported Salt
//   cluster.pub stays byte for byte what its minions pinned).
// Thread-safe; every call may block on disk or etcd (start-up, runners).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "halite/cluster/etcd_client.h"
#include "halite/common/result.h"
#include "halite/wire/rsa.h"

namespace halite::cluster {

struct ClusterKeyPair {
  wire::RsaPrivateKey key;
  std::string pub_text;  // the public key as minions receive it (PEM text)
};

class ClusterKeyPairStore {
 public:
  virtual ~ClusterKeyPairStore() = default;
  // The cluster's pair, made now (`keysize` bits) if there is none yet.
  virtual Result<ClusterKeyPair> LoadOrCreate(int keysize, std::string_view self_id) = 0;
  // NotFound when there is none.
  virtual Result<ClusterKeyPair> Read() = 0;
  // Makes `pair` the cluster's if there is none yet (moving a cluster to etcd); false, and
  // nothing changed, when there is one.
  virtual Result<bool> Adopt(const ClusterKeyPair& pair) = 0;
  // Where it lives, for messages: a path or "etcd:<key>".
  virtual std::string Where() const = 0;
};

std::unique_ptr<ClusterKeyPairStore> MakeFileClusterKeyPair(std::filesystem::path cluster_pki_dir);
// `key`: the etcd key, e.g. "/halite/cluster/keypair".
std::unique_ptr<ClusterKeyPairStore> MakeEtcdClusterKeyPair(std::unique_ptr<EtcdClient> client,
                                                            std::string key);

}  // namespace halite::cluster
