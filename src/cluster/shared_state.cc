#include "halite/cluster/shared_state.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "halite/keys/fs.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/rsa.h"

namespace halite::cluster {

namespace {

bool IsIpLiteral(std::string_view s) {
  std::string text(s);
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 || inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

constexpr auto kStaleRotationLock = std::chrono::seconds(60);

}  // namespace

std::string TcpEndpoint(std::string_view ip, int port) {
  std::string host(ip);
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "tcp://" + host + ":" + std::to_string(port);
}

Status CheckClusterIdentity(std::string_view self_id, std::string_view interface,
                            const std::vector<std::string>& peers) {
  std::string problems;
  if (!IsIpLiteral(self_id)) {
    problems += "id: '" + std::string(self_id) +
                "' must be this master's IP address in a cluster: peers list each other by "
                "address in cluster_peers and halite never resolves names\n";
  } else if (interface != "0.0.0.0" && interface != "::" && interface != self_id) {
    problems += "id: '" + std::string(self_id) + "' differs from interface '" +
                std::string(interface) +
                "': peers reach this master at its id, so set id to the address it listens on\n";
  }
  for (const auto& peer : peers) {
    if (!IsIpLiteral(peer)) {
      problems += "cluster_peers: '" + peer +
                  "' is not an IP address (it is the peer's id "
                  "and its address)\n";
    }
    if (peer == self_id) {
      problems += "cluster_peers: lists this master's own id '" + peer + "'\n";
    }
  }
  if (!problems.empty()) {
    problems.pop_back();
    return Error::InvalidArgument(problems);
  }
  return OkStatus();
}

Status PublishMasterKey(const std::filesystem::path& cluster_pki_dir, std::string_view self_id,
                        std::string_view master_pub_pem) {
  const auto peers = cluster_pki_dir / "peers";
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(peers, 0700));
  const auto path = peers / (std::string(self_id) + ".pub");
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto existing = keys::ReadFile(path);
    if (existing.ok()) {
      if (wire::CleanKey(*existing) == wire::CleanKey(master_pub_pem)) return OkStatus();
      return Error::FailedPrecondition(
          path.string() + " holds another master's key: another master uses the id '" +
          std::string(self_id) + "', or this master was rebuilt (then remove that file)");
    }
    if (existing.error().code != ErrorCode::kNotFound) return existing.error();
    HALITE_ASSIGN_OR_RETURN(bool created, keys::CreateFileExclusive(path, master_pub_pem, 0600));
    if (created) return OkStatus();
  }
  return Error::Unavailable("cannot settle " + path.string());
}

Result<std::string> ReadClusterAes(const std::filesystem::path& cluster_pki_dir) {
  HALITE_ASSIGN_OR_RETURN(std::string key, keys::ReadFile(cluster_pki_dir / ".aes"));
  if (!wire::Crypticle::FromKeyString(key).ok()) {
    return Error::DataLoss((cluster_pki_dir / ".aes").string() + " is not a valid key");
  }
  return key;
}

Result<std::string> LoadOrCreateClusterAes(const std::filesystem::path& cluster_pki_dir) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto existing = ReadClusterAes(cluster_pki_dir);
    if (existing.ok() || existing.error().code != ErrorCode::kNotFound) return existing;
    std::string fresh = wire::Crypticle::GenerateKeyString();
    HALITE_ASSIGN_OR_RETURN(bool created,
                            keys::CreateFileExclusive(cluster_pki_dir / ".aes", fresh, 0600));
    if (created) return fresh;
  }
  return Error::Unavailable("cannot settle the cluster AES key");
}

Result<std::chrono::seconds> ClusterAesAge(const std::filesystem::path& cluster_pki_dir) {
  struct stat st {};
  if (::stat((cluster_pki_dir / ".aes").c_str(), &st) != 0) {
    return Error::Unavailable("cannot stat " + (cluster_pki_dir / ".aes").string());
  }
  auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - mtime);
}

Result<std::string> RotateClusterAes(const std::filesystem::path& cluster_pki_dir,
                                     std::string_view self_id,
                                     std::optional<std::chrono::seconds> only_if_older_than) {
  const auto lock = cluster_pki_dir / ".aes.rotate";
  struct stat st {};
  if (::stat(lock.c_str(), &st) == 0) {
    auto age =
        std::chrono::system_clock::now() - std::chrono::system_clock::from_time_t(st.st_mtime);
    if (age > kStaleRotationLock) {
      spdlog::warn("removing a stale AES rotation lock left by a dead master");
      (void)keys::RemoveFile(lock);
    }
  }
  HALITE_ASSIGN_OR_RETURN(bool locked, keys::CreateFileExclusive(lock, self_id, 0600));
  if (!locked) return Error::AlreadyExists("another master is rotating the cluster AES key");
  if (only_if_older_than) {
    auto age = ClusterAesAge(cluster_pki_dir);
    if (age.ok() && *age < *only_if_older_than) {
      (void)keys::RemoveFile(lock);
      return Error::AlreadyExists("the cluster AES key was just rotated by another master");
    }
  }
  std::string fresh = wire::Crypticle::GenerateKeyString();
  Status written = keys::WriteFileAtomic(cluster_pki_dir / ".aes", fresh, 0600);
  (void)keys::RemoveFile(lock);
  if (!written.ok()) return written.error();
  return fresh;
}

}  // namespace halite::cluster
