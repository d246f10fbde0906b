// ClusterAesStore: where the masters of a cluster keep the AES key their minions share, and how
// exactly one of them rotates it. Two backends behind one interface (a factory each):
// - files: `.aes` in cluster_pki_dir (shared_state.h: exclusive create, a rotation lock file);
// - etcd: one key `<prefix>cluster/aes` holding {"key", "generation", "made", "by"}; created
//   with a compare-and-swap on "absent" (masters starting at the same instant on an empty
//   prefix agree on the first writer's key) and rotated with a compare-and-swap on the
//   revision read (two masters can never both rotate: the loser gets AlreadyExists).
// Thread-safe; every call may block on disk or etcd (worker threads, maintenance loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "halite/cluster/etcd_client.h"
#include "halite/common/result.h"

namespace halite::cluster {

struct ClusterAesKey {
  std::string key;  // Crypticle key string
  std::chrono::seconds age{0};
  std::int64_t generation = 0;  // etcd: 1 for the first key, +1 per rotation; files: 0
};

class ClusterAesStore {
 public:
  virtual ~ClusterAesStore() = default;
  // The cluster's key, made now if there is none yet (the first master to start).
  virtual Result<std::string> LoadOrCreate() = 0;
  virtual Result<ClusterAesKey> Read() = 0;
  // A new key, unless another master is rotating or (with `only_if_older_than`) the key is
  // younger than that: then AlreadyExists. Returns the new key string.
  virtual Result<std::string> Rotate(std::string_view self_id,
                                     std::optional<std::chrono::seconds> only_if_older_than) = 0;
  // Makes `key` the cluster's key if there is none yet (moving a cluster to etcd); false,
  // and nothing changed, when there is one.
  virtual Result<bool> Adopt(const std::string& key) = 0;
  // Where it lives, for messages: a path or "etcd:<key>".
  virtual std::string Where() const = 0;
};

std::unique_ptr<ClusterAesStore> MakeFileClusterAes(std::filesystem::path cluster_pki_dir);
// `key`: the etcd key, e.g. "/halite/cluster/aes".
std::unique_ptr<ClusterAesStore> MakeEtcdClusterAes(std::unique_ptr<EtcdClient> client,
                                                    std::string key);

}  // namespace halite::cluster
