// The two ClusterKeyPairStore backends (cluster_keypair.h).
#include "halite/cluster/cluster_keypair.h"

#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

#include "halite/keys/fs.h"
#include "halite/keys/master_keys.h"

namespace halite::cluster {

namespace {

using nlohmann::json;

class FileClusterKeyPair final : public ClusterKeyPairStore {
 public:
  explicit FileClusterKeyPair(std::filesystem::path dir) : dir_(std::move(dir)) {}

  Result<ClusterKeyPair> LoadOrCreate(int keysize, std::string_view /*self_id*/) override {
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir_, 0700));
    HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey key,
                            keys::LoadOrCreateKeyPair(dir_, "cluster", keysize));
    HALITE_ASSIGN_OR_RETURN(std::string pub, keys::ReadPublicKeyText(dir_, "cluster"));
    return ClusterKeyPair{std::move(key), std::move(pub)};
  }

  Result<ClusterKeyPair> Read() override {
    HALITE_ASSIGN_OR_RETURN(std::string pem, keys::ReadFile(dir_ / "cluster.pem"));
    auto key = wire::RsaPrivateKey::FromPem(pem);
    if (!key.ok()) return Error::DataLoss((dir_ / "cluster.pem").string() + " is not a key");
    auto pub = keys::ReadPublicKeyText(dir_, "cluster");
    if (!pub.ok() && pub.error().code != ErrorCode::kNotFound) return pub.error();
    return ClusterKeyPair{*key, pub.ok() ? *pub : key->PublicKey().ToPem()};
  }

  Result<bool> Adopt(const ClusterKeyPair& pair) override {
    HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir_, 0700));
    HALITE_ASSIGN_OR_RETURN(
        bool created, keys::CreateFileExclusive(dir_ / "cluster.pem", pair.key.ToPem(), 0400));
    if (!created) return false;
    HALITE_RETURN_IF_ERROR(keys::WriteFileAtomic(dir_ / "cluster.pub", pair.pub_text, 0600));
    return true;
  }

  std::string Where() const override { return (dir_ / "cluster.pem").string(); }

 private:
  const std::filesystem::path dir_;
};

class EtcdClusterKeyPair final : public ClusterKeyPairStore {
 public:
  EtcdClusterKeyPair(std::unique_ptr<EtcdClient> client, std::string key)
      : client_(std::move(client)), key_(std::move(key)) {}

  Result<ClusterKeyPair> LoadOrCreate(int keysize, std::string_view self_id) override {
    std::lock_guard lock(mu_);
    auto current = ReadLocked();
    if (current.ok() || current.error().code != ErrorCode::kNotFound) return current;
    // Generating takes about a second: another master starting now may win the swap, and
    // then its pair is the cluster's.
    HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey fresh, wire::RsaPrivateKey::Generate(keysize));
    ClusterKeyPair pair{fresh, fresh.PublicKey().ToPem()};
    HALITE_ASSIGN_OR_RETURN(bool created, client_->PutIfRevision(key_, Encode(pair, self_id), 0));
    if (created) return pair;
    return ReadLocked();
  }

  Result<ClusterKeyPair> Read() override {
    std::lock_guard lock(mu_);
    return ReadLocked();
  }

  Result<bool> Adopt(const ClusterKeyPair& pair) override {
    std::lock_guard lock(mu_);
    return client_->PutIfRevision(key_, Encode(pair, "import"), 0);
  }

  std::string Where() const override { return "etcd:" + key_; }

 private:
  static std::string Encode(const ClusterKeyPair& pair, std::string_view by) {
    return json{{"pem", pair.key.ToPem()},
                {"pub", pair.pub_text},
                {"made", static_cast<std::int64_t>(std::time(nullptr))},
                {"by", std::string(by)}}
        .dump();
  }

  Result<ClusterKeyPair> ReadLocked() {
    HALITE_ASSIGN_OR_RETURN(EtcdKeyValue kv, client_->Get(key_));
    const json value = json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
    if (!value.is_object() || !value.contains("pem") || !value["pem"].is_string() ||
        !value.contains("pub") || !value["pub"].is_string()) {
      return Error::DataLoss("the cluster key pair in etcd (" + key_ + ") is malformed");
    }
    auto key = wire::RsaPrivateKey::FromPem(value["pem"].get<std::string>());
    if (!key.ok())
      return Error::DataLoss("the cluster key pair in etcd (" + key_ + ") is not a key");
    std::string pub = value["pub"].get<std::string>();
    auto parsed_pub = wire::RsaPublicKey::FromPem(pub);
    if (!parsed_pub.ok() || parsed_pub->ToPem() != key->PublicKey().ToPem()) {
      return Error::DataLoss("the cluster key pair in etcd (" + key_ +
                             "): the public key is not the private key's");
    }
    return ClusterKeyPair{std::move(*key), std::move(pub)};
  }

  std::mutex mu_;  // EtcdClient is not thread-safe
  const std::unique_ptr<EtcdClient> client_;
  const std::string key_;
};

}  // namespace

std::unique_ptr<ClusterKeyPairStore> MakeFileClusterKeyPair(std::filesystem::path cluster_pki_dir) {
  return std::make_unique<FileClusterKeyPair>(std::move(cluster_pki_dir));
}

std::unique_ptr<ClusterKeyPairStore> MakeEtcdClusterKeyPair(std::unique_ptr<EtcdClient> client,
                                                            std::string key) {
  return std::make_unique<EtcdClusterKeyPair>(std::move(client), std::move(key));
}

}  // namespace halite::cluster
