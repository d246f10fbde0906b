// GlusterVolume: a real GlusterFS for tests (Debian's glusterfs-server): one glusterd bound to a
// loopback address, a 3-brick replica volume with bricks in a temp dir, mounted with FUSE, and
// TLS on the I/O path (client.ssl/server.ssl, auth.ssl-allow) and on the management path.
//
// Not thread-safe; one per process, and one per host at a time: glusterd's port 24007 is fixed,
// and management TLS is switched on by fixed paths (/var/lib/glusterd/secure-access, the
// management certificates /usr/lib/ssl/glusterfs.{pem,key,ca}), which the test writes while
// it runs and removes (or restores) after. ctest serialises these tests with the resource lock
// `glusterfs` (tests/integration/CMakeLists.txt).
//
// The test process becomes a child subreaper, so the daemons gluster forks (glusterd, bricks,
// self-heal daemon, FUSE client) are reaped here. Everything lives under
// /tmp/halite-gluster-XXXXXX; Create() first removes what a crashed earlier run left (its
// mounts, processes, files and the fixed paths).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "halite/common/result.h"
#include "harness.h"

namespace halite::testing {

class GlusterVolume {
 public:
  static constexpr int kBricks = 3;
  static constexpr const char* kVolume = "halite";
  // The CN of the certificate every node and client of the test shows (auth.ssl-allow).
  static constexpr const char* kNodeName = "halite-gluster-node";

  // Makes the CA and certificates, starts glusterd on `ip` (not 127.0.0.1: gluster refuses
  // bricks there), creates and starts the volume and mounts it. FailedPrecondition when
  // GlusterFS or FUSE is missing; Internal with gluster's output for any other failure.
  static Result<std::unique_ptr<GlusterVolume>> Create(const std::string& ip);
  // Unmounts, kills every gluster process of this volume, removes the dir and the fixed paths.
  ~GlusterVolume();
  GlusterVolume(const GlusterVolume&) = delete;
  GlusterVolume& operator=(const GlusterVolume&) = delete;

  // Removes what a crashed earlier run left: mounts and processes under /tmp/halite-gluster-*,
  // those dirs, the brick logs and sockets, and the fixed TLS paths it had written.
  static void CleanStale();

  const std::filesystem::path& mount() const { return mount_; }
  const std::string& ip() const { return ip_; }
  std::filesystem::path brick(int i) const;
  // The CA, node and rogue (signed by another CA, same CN) certificates and keys.
  std::filesystem::path tls_dir() const { return root_ / "tls"; }

  // `gluster --mode=script ARGS` against this glusterd.
  CommandResult Cli(const std::vector<std::string>& args);
  // The pid of brick `i`'s glusterfsd, from glusterd's pid file; -1 when it is not running.
  pid_t BrickPid(int i) const;
  // SIGKILL to brick `i` and waits until the process is gone.
  Status KillBrick(int i);
  // `gluster volume start VOL force` (restarts dead bricks) and waits until every brick runs
  // and the FUSE client is connected to it again; then asks the self-heal daemon to heal.
  Status RestartBricks();
  // No entry is waiting for heal on any brick and every brick holds the same files with the
  // same contents. `why` says what differs.
  bool Healed(std::string* why) const;

  // Mounts the volume at `at` in a mount namespace of its own in which the management
  // certificate (`mgmt_cert`, `mgmt_key`) and the I/O path certificate (`io_cert`, `io_key`)
  // are the given files, reads `probe` (a path relative to the mount) and unmounts. Returns
  // the contents read, or the failure with the client's log. A stand-in for a client on
  // another host with certificates of its own.
  Result<std::string> MountAsClient(const std::filesystem::path& mgmt_cert,
                                    const std::filesystem::path& mgmt_key,
                                    const std::filesystem::path& io_cert,
                                    const std::filesystem::path& io_key, const std::string& probe);

  // The I/O path alone: a client that asks no glusterd (no volfile fetch, no port lookup)
  // but reads the volume from the bricks' ports with its own volfile (the volume's client
  // volfile, the ports filled in, `cert` and `key` as its certificate), as one that knows the
  // ports would. Returns what it read of `probe`, or the failure with the client's log.
  Result<std::string> ReadFromBricksAsClient(const std::filesystem::path& cert,
                                             const std::filesystem::path& key,
                                             const std::string& probe);

  // Logs of glusterd, the bricks and the mount (tail of each), for failure messages.
  std::string Logs() const;

 private:
  GlusterVolume(std::filesystem::path root, std::string ip);
  Status MakeCertificates();
  Status InstallFixedTlsFiles();
  Status StartGlusterd();
  Status CreateVolume();
  Status Mount();
  // Every live brick is connected to the FUSE client (its log shows no child down since).
  bool BricksOnline();

  const std::filesystem::path root_;
  const std::string ip_;
  const std::filesystem::path mount_;
  bool mounted_ = false;
};

}  // namespace halite::testing
