// What masters of one cluster share through cluster_pki_dir (salt-wire 10.2), made safe when
// several masters start or rotate at once:
// - peers/<id>.pub: each master's own master.pub; a different key already there stops
//   start-up with a message that says what to remove.
// - .aes: the cluster AES key minions use. Created by the first master (exclusive create;
//   the others read the winner's). Rotated by exactly one master at a time: the rotator
//   holds .aes.rotate (exclusive create, removed after; stale after a minute), writes the
//   new key atomically and announces it; peers re-read the file.
// All functions block on disk: call them at start-up or from worker threads.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"

namespace halite::cluster {

// salt-wire 10.1: a peer entry is both the peer's id and its address, and halite never
// resolves names, so ids in a cluster are IP literals. Error::InvalidArgument otherwise,
// naming the setting to fix.
Status CheckClusterIdentity(std::string_view self_id, std::string_view interface,
                            const std::vector<std::string>& peers);

Status PublishMasterKey(const std::filesystem::path& cluster_pki_dir, std::string_view self_id,
                        std::string_view master_pub_pem);

Result<std::string> LoadOrCreateClusterAes(const std::filesystem::path& cluster_pki_dir);
Result<std::string> ReadClusterAes(const std::filesystem::path& cluster_pki_dir);
// Age of .aes, for periodic rotation after publish_session.
Result<std::chrono::seconds> ClusterAesAge(const std::filesystem::path& cluster_pki_dir);

// Rotates .aes when no other master is rotating. With `only_if_older_than`, the age is
// checked again under the lock, so masters racing on the same schedule rotate once.
// Returns the new key string; Error::AlreadyExists when another master holds the lock or
// has just rotated.
Result<std::string> RotateClusterAes(
    const std::filesystem::path& cluster_pki_dir, std::string_view self_id,
    std::optional<std::chrono::seconds> only_if_older_than = std::nullopt);

// "tcp://ip:port" with IPv6 brackets.
std::string TcpEndpoint(std::string_view ip, int port);

}  // namespace halite::cluster
