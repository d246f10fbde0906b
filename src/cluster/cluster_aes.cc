// The two ClusterAesStore backends (cluster_aes.h).
#include "halite/cluster/cluster_aes.h"

#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

#include "halite/cluster/shared_state.h"
#include "halite/keys/fs.h"
#include "halite/wire/crypticle.h"

namespace halite::cluster {

namespace {

using nlohmann::json;

class FileClusterAes final : public ClusterAesStore {
 public:
  explicit FileClusterAes(std::filesystem::path dir) : dir_(std::move(dir)) {}

  Result<std::string> LoadOrCreate() override { return LoadOrCreateClusterAes(dir_); }

  Result<ClusterAesKey> Read() override {
    ClusterAesKey out;
    HALITE_ASSIGN_OR_RETURN(out.key, ReadClusterAes(dir_));
    HALITE_ASSIGN_OR_RETURN(out.age, ClusterAesAge(dir_));
    return out;
  }

  Result<std::string> Rotate(std::string_view self_id,
                             std::optional<std::chrono::seconds> only_if_older_than) override {
    return RotateClusterAes(dir_, self_id, only_if_older_than);
  }

  Result<bool> Adopt(const std::string& key) override {
    if (auto parsed = wire::Crypticle::FromKeyString(key); !parsed.ok()) return parsed.error();
    return keys::CreateFileExclusive(dir_ / ".aes", key, 0600);
  }

  std::string Where() const override { return (dir_ / ".aes").string(); }

 private:
  const std::filesystem::path dir_;
};

class EtcdClusterAes final : public ClusterAesStore {
 public:
  EtcdClusterAes(std::unique_ptr<EtcdClient> client, std::string key)
      : client_(std::move(client)), key_(std::move(key)) {}

  Result<std::string> LoadOrCreate() override {
    std::lock_guard lock(mu_);
    auto current = ReadLocked();
    if (current.ok()) return std::move(current->first.key);
    if (current.error().code != ErrorCode::kNotFound) return current.error();
    const std::string fresh = wire::Crypticle::GenerateKeyString();
    HALITE_ASSIGN_OR_RETURN(bool created, client_->PutIfRevision(key_, Encode(fresh, 1, ""), 0));
    if (created) return fresh;
    // Another master made it first: theirs is the cluster's.
    HALITE_ASSIGN_OR_RETURN(auto winner, ReadLocked());
    return std::move(winner.first.key);
  }

  Result<ClusterAesKey> Read() override {
    std::lock_guard lock(mu_);
    HALITE_ASSIGN_OR_RETURN(auto current, ReadLocked());
    return std::move(current.first);
  }

  Result<std::string> Rotate(std::string_view self_id,
                             std::optional<std::chrono::seconds> only_if_older_than) override {
    std::lock_guard lock(mu_);
    HALITE_ASSIGN_OR_RETURN(auto current, ReadLocked());
    if (only_if_older_than && current.first.age < *only_if_older_than) {
      return Error::AlreadyExists("the cluster AES key was rotated " +
                                  std::to_string(current.first.age.count()) + " s ago");
    }
    const std::string fresh = wire::Crypticle::GenerateKeyString();
    HALITE_ASSIGN_OR_RETURN(
        bool swapped,
        client_->PutIfRevision(key_, Encode(fresh, current.first.generation + 1, self_id),
                               current.second));
    if (!swapped) return Error::AlreadyExists("another master rotated the cluster AES key first");
    return fresh;
  }

  Result<bool> Adopt(const std::string& key) override {
    if (auto parsed = wire::Crypticle::FromKeyString(key); !parsed.ok()) return parsed.error();
    std::lock_guard lock(mu_);
    return client_->PutIfRevision(key_, Encode(key, 1, "import"), 0);
  }

  std::string Where() const override { return "etcd:" + key_; }

 private:
  static std::string Encode(const std::string& key, std::int64_t generation, std::string_view by) {
    return json{{"key", key},
                {"generation", generation},
                {"made", static_cast<std::int64_t>(std::time(nullptr))},
                {"by", std::string(by)}}
        .dump();
  }

  // The key and the etcd revision it was read at.
  Result<std::pair<ClusterAesKey, std::int64_t>> ReadLocked() {
    HALITE_ASSIGN_OR_RETURN(EtcdKeyValue kv, client_->Get(key_));
    const json value = json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
    if (!value.is_object() || !value.contains("key") || !value["key"].is_string() ||
        !value.contains("generation") || !value["generation"].is_number_integer() ||
        !value.contains("made") || !value["made"].is_number_integer()) {
      return Error::DataLoss("the cluster AES key in etcd (" + key_ + ") is malformed");
    }
    ClusterAesKey out;
    out.key = value["key"].get<std::string>();
    if (!wire::Crypticle::FromKeyString(out.key).ok()) {
      return Error::DataLoss("the cluster AES key in etcd (" + key_ + ") is not a key");
    }
    out.generation = value["generation"].get<std::int64_t>();
    const auto made = value["made"].get<std::int64_t>();
    out.age = std::chrono::seconds(std::max<std::int64_t>(0, std::time(nullptr) - made));
    return std::make_pair(std::move(out), kv.mod_revision);
  }

  std::mutex mu_;  // EtcdClient is not thread-safe
  const std::unique_ptr<EtcdClient> client_;
  const std::string key_;
};

}  // namespace

std::unique_ptr<ClusterAesStore> MakeFileClusterAes(std::filesystem::path cluster_pki_dir) {
  return std::make_unique<FileClusterAes>(std::move(cluster_pki_dir));
}

std::unique_ptr<ClusterAesStore> MakeEtcdClusterAes(std::unique_ptr<EtcdClient> client,
                                                    std::string key) {
  return std::make_unique<EtcdClusterAes>(std::move(client), std::move(key));
}

}  // namespace halite::cluster
