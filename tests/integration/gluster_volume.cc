#include "gluster_volume.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace halite::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kRootPrefix = "/tmp/halite-gluster-";
constexpr const char* kMarker = "# written by halite's GlusterFS test; removed when it ends\n";
constexpr const char* kSavedSuffix = ".halite-test-saved";

// Paths gluster 10 reads for management TLS; none can be moved (compiled in).
const fs::path kSecureAccess = "/var/lib/glusterd/secure-access";
const fs::path kMgmtCert = "/usr/lib/ssl/glusterfs.pem";
const fs::path kMgmtKey = "/usr/lib/ssl/glusterfs.key";
const fs::path kMgmtCa = "/usr/lib/ssl/glusterfs.ca";
const fs::path kBrickLogs = "/var/log/glusterfs/bricks";

std::string Tail(const fs::path& path, std::size_t n = 3000) {
  std::string text = ReadFileOrEmpty(path);
  return text.size() > n ? text.substr(text.size() - n) : text;
}

std::string Describe(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
}

// A /proc/<pid>/cmdline as its arguments; empty for a zombie or a vanished process.
std::vector<std::string> Cmdline(pid_t pid) {
  std::string raw = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  std::string arg;
  for (char c : raw) {
    if (c == '\0') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  return args;
}

// Process state and parent from /proc/<pid>/stat ('?' when gone).
char State(pid_t pid, pid_t* ppid = nullptr) {
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return '?';
  if (ppid != nullptr) *ppid = std::atoi(stat.c_str() + close + 4);
  return stat[close + 2];
}

// Reaps `pid` when it is our child (we are a subreaper, so orphaned gluster daemons are), and
// waits until it has gone or is a zombie of someone else.
bool WaitGone(pid_t pid) {
  return WaitFor(
      [&] {
        pid_t ppid = 0;
        char state = State(pid, &ppid);
        if (state == '?') return true;
        if (ppid == ::getpid()) {
          int status = 0;
          if (::waitpid(pid, &status, WNOHANG) == pid) return true;
        }
        return state == 'Z' && ppid != ::getpid();
      },
      20s, 20ms);
}

// Live gluster processes whose command line names a path under `prefix`.
std::vector<pid_t> GlusterProcesses(const std::string& prefix) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::atoi(name.c_str());
    const auto args = Cmdline(pid);
    if (args.empty() || fs::path(args[0]).filename().string().rfind("gluster", 0) != 0) {
      continue;
    }
    if (std::any_of(args.begin(), args.end(),
                    [&](const std::string& a) { return a.find(prefix) != std::string::npos; })) {
      found.push_back(pid);
    }
  }
  return found;
}

// Kills the processes, waits for them, and removes the unix sockets their `-S` names (bricks
// and the self-heal daemon keep theirs in /var/run/gluster).
void KillAll(const std::vector<pid_t>& pids) {
  std::vector<std::string> sockets;
  for (pid_t pid : pids) {
    const auto args = Cmdline(pid);
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "-S") sockets.push_back(args[i + 1]);
    }
    ::kill(pid, SIGKILL);
  }
  for (pid_t pid : pids) WaitGone(pid);
  std::error_code ec;
  for (const auto& s : sockets) fs::remove(s, ec);
}

// Mount points under `prefix` (from /proc/self/mounts; octal escapes are not needed for our
// paths).
std::vector<std::string> MountsUnder(const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(ReadFileOrEmpty("/proc/self/mounts"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, point;
    fields >> device >> point;
    if (point.rfind(prefix, 0) == 0) found.push_back(point);
  }
  return found;
}

void Unmount(const std::string& point) {
  if (Run({"/bin/umount", point}, 30s).exit_code != 0) Run({"/bin/umount", "-l", point}, 30s);
}

// Writes a fixed-path file for the test: an existing file that is not ours is kept aside and
// restored by RemoveFixedFile.
Status WriteFixedFile(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (fs::exists(path) && ReadFileOrEmpty(path).rfind(kMarker, 0) != 0) {
    fs::rename(path, path.string() + kSavedSuffix, ec);
    if (ec) return Error::Internal("cannot keep " + path.string() + " aside: " + ec.message());
  }
  fs::create_directories(path.parent_path(), ec);
  WriteFile(path, kMarker + content);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, ec);
  if (ReadFileOrEmpty(path).rfind(kMarker, 0) != 0) {
    return Error::Internal("cannot write " + path.string());
  }
  return OkStatus();
}

void RemoveFixedFile(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path) && ReadFileOrEmpty(path).rfind(kMarker, 0) == 0) fs::remove(path, ec);
  const fs::path saved = path.string() + kSavedSuffix;
  if (fs::exists(saved) && !fs::exists(path)) fs::rename(saved, path, ec);
}

// Regular files of a brick (not gluster's own .glusterfs*), relative path -> contents.
std::map<std::string, std::string> BrickFiles(const fs::path& brick) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(brick, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    // Lexical: a file may vanish while we walk (the masters keep writing).
    const auto rel = it->path().lexically_relative(brick).string();
    const auto name = it->path().filename().string();
    // Gluster's own metadata, and the masters' health probes (written and removed every
    // second, so two bricks read one after the other rarely agree on them).
    if (rel.rfind(".glusterfs", 0) == 0 || name.rfind(".health-", 0) == 0 ||
        name == ".halite_probe") {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) files[rel] = ReadFileOrEmpty(it->path());
  }
  return files;
}

// Entries the index translator holds for pending heals ("xattrop-<uuid>" is its base file).
std::vector<std::string> PendingHeals(const fs::path& brick) {
  std::vector<std::string> pending;
  std::error_code ec;
  for (const char* index : {"xattrop", "dirty", "entry-changes"}) {
    for (const auto& e : fs::directory_iterator(brick / ".glusterfs" / "indices" / index, ec)) {
      const auto name = e.path().filename().string();
      if (name.rfind(index, 0) != 0) pending.push_back(std::string(index) + "/" + name);
    }
  }
  return pending;
}

}  // namespace

GlusterVolume::GlusterVolume(fs::path root, std::string ip)
    : root_(std::move(root)), ip_(std::move(ip)), mount_(root_ / "mnt") {}

fs::path GlusterVolume::brick(int i) const { return root_ / "bricks" / ("b" + std::to_string(i)); }

void GlusterVolume::CleanStale() {
  for (const auto& point : MountsUnder(kRootPrefix)) Unmount(point);
  KillAll(GlusterProcesses(kRootPrefix));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
    const auto path = entry.path().string();
    if (path.rfind(kRootPrefix, 0) == 0 && MountsUnder(path).empty()) fs::remove_all(path, ec);
  }
  for (const auto& entry : fs::directory_iterator(kBrickLogs, ec)) {
    if (entry.path().filename().string().rfind("tmp-halite-gluster-", 0) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
  for (const auto& path : {kSecureAccess, kMgmtCert, kMgmtKey, kMgmtCa}) RemoveFixedFile(path);
}

Result<std::unique_ptr<GlusterVolume>> GlusterVolume::Create(const std::string& ip) {
  for (const char* bin : {"/usr/sbin/glusterd", "/usr/sbin/gluster", "/usr/sbin/mount.glusterfs",
                          "/usr/bin/openssl", "/usr/bin/unshare"}) {
    if (!fs::exists(bin)) {
      return Error::FailedPrecondition(std::string(bin) +
                                       " is missing: install glusterfs-server, glusterfs-client, "
                                       "openssl and util-linux (tools/bootstrap)");
    }
  }
  if (!fs::exists("/dev/fuse")) return Error::FailedPrecondition("/dev/fuse is missing");
  if (::geteuid() != 0) return Error::FailedPrecondition("glusterd and FUSE mounts need root");
  // Orphaned gluster daemons become our children: reaped here, not left as zombies.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return Error::Internal("PR_SET_CHILD_SUBREAPER");
  CleanStale();
  // A host's own glusterd (the package's service) holds port 24007 on every address.
  for (pid_t pid : GlusterProcesses("")) {
    const auto args = Cmdline(pid);
    if (!args.empty() && fs::path(args[0]).filename() == "glusterd") {
      return Error::FailedPrecondition("a glusterd that is not the test's runs (pid " +
                                       std::to_string(pid) +
                                       "): stop it (systemctl stop glusterd)");
    }
  }
  std::string pattern = std::string(kRootPrefix) + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return Error::Internal("mkdtemp " + pattern);
  std::unique_ptr<GlusterVolume> volume(new GlusterVolume(pattern, ip));
  HALITE_RETURN_IF_ERROR(volume->MakeCertificates());
  HALITE_RETURN_IF_ERROR(volume->InstallFixedTlsFiles());
  HALITE_RETURN_IF_ERROR(volume->StartGlusterd());
  HALITE_RETURN_IF_ERROR(volume->CreateVolume());
  HALITE_RETURN_IF_ERROR(volume->Mount());
  return volume;
}

GlusterVolume::~GlusterVolume() {
  for (const auto& point : MountsUnder(root_.string() + "/")) Unmount(point);
  KillAll(GlusterProcesses(root_.string() + "/"));
  std::error_code ec;
  const std::string brick_log_prefix = "tmp-" + root_.filename().string() + "-";
  for (const auto& entry : fs::directory_iterator(kBrickLogs, ec)) {
    if (entry.path().filename().string().rfind(brick_log_prefix, 0) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
  for (const auto& path : {kSecureAccess, kMgmtCert, kMgmtKey, kMgmtCa}) RemoveFixedFile(path);
  // Never delete through a mount that is still there.
  if (MountsUnder(root_.string() + "/").empty() &&
      std::getenv("HALITE_KEEP_TEST_DIRS") == nullptr) {
    fs::remove_all(root_, ec);
  }
}

Status GlusterVolume::MakeCertificates() {
  const fs::path d = tls_dir();
  fs::create_directories(d);
  auto openssl = [&](std::vector<std::string> args) -> Status {
    args.insert(args.begin(), "/usr/bin/openssl");
    auto r = Run(args, 60s);
    if (r.exit_code != 0) return Error::Internal("openssl: " + Describe(r));
    return OkStatus();
  };
  auto path = [&](const char* name) { return (d / name).string(); };
  // P-256 keys: as good for the test as RSA and generated in milliseconds.
  // Our CA, and a node certificate it signs (every node and client of the test shows it).
  HALITE_RETURN_IF_ERROR(
      openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
               "-nodes", "-days", "2", "-subj", "/CN=halite test CA", "-keyout", path("ca.key"),
               "-out", path("ca.pem")}));
  HALITE_RETURN_IF_ERROR(openssl(
      {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
       std::string("/CN=") + kNodeName, "-keyout", path("node.key"), "-out", path("node.csr")}));
  HALITE_RETURN_IF_ERROR(
      openssl({"x509", "-req", "-in", path("node.csr"), "-CA", path("ca.pem"), "-CAkey",
               path("ca.key"), "-CAcreateserial", "-days", "2", "-out", path("node.pem")}));
  // A rogue: the same CN, signed by a CA of the same name that is not ours. Only the
  // signature tells it apart, so a refusal proves the CA check (not auth.ssl-allow's names).
  HALITE_RETURN_IF_ERROR(
      openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
               "-nodes", "-days", "2", "-subj", "/CN=halite test CA", "-keyout",
               path("rogue-ca.key"), "-out", path("rogue-ca.pem")}));
  HALITE_RETURN_IF_ERROR(openssl(
      {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
       std::string("/CN=") + kNodeName, "-keyout", path("rogue.key"), "-out", path("rogue.csr")}));
  return openssl({"x509", "-req", "-in", path("rogue.csr"), "-CA", path("rogue-ca.pem"), "-CAkey",
                  path("rogue-ca.key"), "-CAcreateserial", "-days", "2", "-out",
                  path("rogue.pem")});
}

Status GlusterVolume::InstallFixedTlsFiles() {
  // secure-access turns on TLS for every management connection: glusterd, the bricks' and
  // clients' volfile fetches, the CLI. Those connections use the fixed certificate paths.
  HALITE_RETURN_IF_ERROR(WriteFixedFile(kMgmtCert, ReadFileOrEmpty(tls_dir() / "node.pem")));
  HALITE_RETURN_IF_ERROR(WriteFixedFile(kMgmtKey, ReadFileOrEmpty(tls_dir() / "node.key")));
  HALITE_RETURN_IF_ERROR(WriteFixedFile(kMgmtCa, ReadFileOrEmpty(tls_dir() / "ca.pem")));
  return WriteFixedFile(kSecureAccess, "option transport.socket.ssl-cert-depth 1\n");
}

Status GlusterVolume::StartGlusterd() {
  for (const char* dir : {"wd", "run", "log", "bricks", "mnt"}) fs::create_directories(root_ / dir);
  // glusterd's own volfile: state and run dirs here, not /var/lib/glusterd and /run/gluster;
  // the CLI socket here; TCP only on our loopback address; a port range of its own.
  std::ostringstream vol;
  vol << "volume management\n"
      << "  type mgmt/glusterd\n"
      << "  option working-directory " << (root_ / "wd").string() << "\n"
      << "  option run-directory " << (root_ / "run").string() << "\n"
      << "  option glusterd-sockfile " << (root_ / "run" / "glusterd.socket").string() << "\n"
      << "  option transport-type socket\n"
      << "  option transport.socket.bind-address " << ip_ << "\n"
      << "  option transport.socket.listen-port 24007\n"
      << "  option transport.socket.ssl-own-cert " << (tls_dir() / "node.pem").string() << "\n"
      << "  option transport.socket.ssl-private-key " << (tls_dir() / "node.key").string() << "\n"
      << "  option transport.socket.ssl-ca-list " << (tls_dir() / "ca.pem").string() << "\n"
      << "  option ping-timeout 0\n"
      << "  option event-threads 1\n"
      << "  option base-port 49152\n"
      << "  option max-port 49251\n"
      << "end-volume\n";
  WriteFile(root_ / "glusterd.vol", vol.str());
  auto r = Run(
      {"/usr/sbin/glusterd", "-f", (root_ / "glusterd.vol").string(), "-p",
       (root_ / "run" / "glusterd.pid").string(), "-l", (root_ / "log" / "glusterd.log").string()},
      60s);
  if (r.exit_code != 0) return Error::Internal("glusterd: " + Describe(r));
  CommandResult peers;
  if (!WaitFor([&] { return (peers = Cli({"peer", "status"})).exit_code == 0; }, 30s, 100ms)) {
    return Error::Internal("glusterd does not answer: " + Describe(peers) + "\n" +
                           Tail(root_ / "log" / "glusterd.log"));
  }
  return OkStatus();
}

CommandResult GlusterVolume::Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/sbin/gluster", "--mode=script",
                                "--glusterd-sock=" + (root_ / "run" / "glusterd.socket").string(),
                                "--log-file=" + (root_ / "log" / "cli.log").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, 120s);
}

Status GlusterVolume::CreateVolume() {
  std::vector<std::string> create{"volume", "create", kVolume, "replica", std::to_string(kBricks)};
  for (int i = 0; i < kBricks; ++i) {
    fs::create_directories(brick(i));
    create.push_back(ip_ + ":" + brick(i).string());
  }
  create.push_back("force");  // bricks on one host and on the root filesystem
  auto r = Cli(create);
  if (r.exit_code != 0) return Error::Internal("volume create: " + Describe(r));
  const std::vector<std::pair<std::string, std::string>> options = {
      // I/O path TLS: bricks and clients talk TLS, and a brick lets in only our CN.
      {"client.ssl", "on"},
      {"server.ssl", "on"},
      {"auth.ssl-allow", kNodeName},
      {"ssl.own-cert", (tls_dir() / "node.pem").string()},
      {"ssl.private-key", (tls_dir() / "node.key").string()},
      {"ssl.ca-list", (tls_dir() / "ca.pem").string()},
      {"ssl.certificate-depth", "1"},
      // A killed brick is noticed at once (the connection resets), not after 42 s.
      {"network.ping-timeout", "5"},
      // The self-heal daemon crawls the index every 5 s, not every 600: an entry marked after
      // the one `volume heal` a test asks for (a master wrote while the brick came back) is
      // healed within seconds, as the test waits for, not ten minutes later.
      {"cluster.heal-timeout", "5"},
  };
  std::vector<std::string> set{"volume", "set", kVolume};  // one command: each costs ~0.4 s
  for (const auto& [key, value] : options) {
    set.push_back(key);
    set.push_back(value);
  }
  r = Cli(set);
  if (r.exit_code != 0) return Error::Internal("volume set: " + Describe(r));
  r = Cli({"volume", "start", kVolume});
  if (r.exit_code != 0) return Error::Internal("volume start: " + Describe(r) + "\n" + Logs());
  return OkStatus();
}

Status GlusterVolume::Mount() {
  auto r = Run(
      {"/bin/mount", "-t", "glusterfs", "-o", "log-file=" + (root_ / "log" / "mnt.log").string(),
       ip_ + ":/" + kVolume, mount_.string()},
      60s);
  if (r.exit_code != 0) return Error::Internal("mount: " + Describe(r) + "\n" + Logs());
  mounted_ = true;
  // Writes go to every brick from the start (none needs healing before the test begins).
  if (!WaitFor([&] { return BricksOnline(); }, 60s, 100ms)) {
    return Error::Internal("the client did not connect to every brick\n" + Logs());
  }
  return OkStatus();
}

pid_t GlusterVolume::BrickPid(int i) const {
  // glusterd's pid file: run/vols/<vol>/<host>-<path with '/' as '-'>.pid
  std::string path = brick(i).string();
  std::replace(path.begin(), path.end(), '/', '-');
  const auto file = root_ / "run" / "vols" / kVolume / (ip_ + path + ".pid");
  const pid_t pid = std::atoi(ReadFileOrEmpty(file).c_str());
  if (pid <= 0) return -1;
  const char state = State(pid);
  return state == '?' || state == 'Z' ? -1 : pid;
}

Status GlusterVolume::KillBrick(int i) {
  const pid_t pid = BrickPid(i);
  if (pid <= 0) return Error::FailedPrecondition("brick " + std::to_string(i) + " is not running");
  KillAll({pid});  // and removes its socket: a restarted brick makes a new one
  if (BrickPid(i) > 0) return Error::Internal("brick " + std::to_string(pid) + " outlived SIGKILL");
  return OkStatus();
}

bool GlusterVolume::BricksOnline() {
  // `volume status VOL clients`: per brick, the clients connected to it. Every brick is up
  // and has as many clients as the others (the FUSE client and the self-heal daemon).
  auto r = Cli({"volume", "status", kVolume, "clients"});
  if (r.exit_code != 0) return false;
  std::vector<int> counts;
  const std::string key = "Clients connected : ";
  for (auto at = r.out.find(key); at != std::string::npos; at = r.out.find(key, at + 1)) {
    counts.push_back(std::atoi(r.out.c_str() + at + key.size()));
  }
  for (int i = 0; i < kBricks; ++i) {
    if (BrickPid(i) <= 0) return false;
  }
  return counts.size() == kBricks &&
         std::all_of(counts.begin(), counts.end(), [](int n) { return n >= 2; });
}

Status GlusterVolume::RestartBricks() {
  auto r = Cli({"volume", "start", kVolume, "force"});
  if (r.exit_code != 0) return Error::Internal("volume start force: " + Describe(r));
  if (!WaitFor([&] { return BricksOnline(); }, 60s, 200ms)) {
    return Error::Internal("the restarted brick did not come back\n" + Logs());
  }
  r = Cli({"volume", "heal", kVolume});
  if (r.exit_code != 0) return Error::Internal("volume heal: " + Describe(r));
  return OkStatus();
}

bool GlusterVolume::Healed(std::string* why) const {
  const auto reference = BrickFiles(brick(0));
  for (int i = 0; i < kBricks; ++i) {
    const auto pending = PendingHeals(brick(i));
    if (!pending.empty()) {
      *why = "brick " + std::to_string(i) + " has " + std::to_string(pending.size()) +
             " entries to heal, e.g. " + pending.front();
      return false;
    }
    if (i == 0) continue;
    const auto files = BrickFiles(brick(i));
    if (files != reference) {
      std::string diff;
      for (const auto& [name, content] : reference) {
        auto it = files.find(name);
        if (it == files.end() || it->second != content) diff += " " + name;
      }
      *why = "brick " + std::to_string(i) + " differs from brick 0 (" +
             std::to_string(files.size()) + " vs " + std::to_string(reference.size()) +
             " files):" + diff.substr(0, 500);
      return false;
    }
  }
  *why = "healed: " + std::to_string(reference.size()) + " files on every brick";
  return true;
}

Result<std::string> GlusterVolume::MountAsClient(const fs::path& mgmt_cert,
                                                 const fs::path& mgmt_key, const fs::path& io_cert,
                                                 const fs::path& io_key, const std::string& probe) {
  static int n = 0;
  const fs::path at = root_ / ("client-" + std::to_string(n++));
  const fs::path log = root_ / "log" / (at.filename().string() + ".log");
  fs::create_directories(at);
  // Bind mounts in a private mount namespace: the certificates this client sees, without
  // touching the host's. The mount, if it happens, lives and dies in that namespace.
  const std::string script =
      "set -e; mount --bind \"$1\" " + kMgmtCert.string() + "; mount --bind \"$2\" " +
      kMgmtKey.string() + "; mount --bind \"$3\" " + (tls_dir() / "node.pem").string() +
      "; mount --bind \"$4\" " + (tls_dir() / "node.key").string() +
      "; set +e; mount -t glusterfs -o log-file=\"$7\" \"$5\" \"$6\" || exit 32; "
      "cat \"$6/$8\"; rc=$?; umount \"$6\"; exit $rc";
  auto r = Run({"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script,
                "client", mgmt_cert.string(), mgmt_key.string(), io_cert.string(), io_key.string(),
                ip_ + ":/" + kVolume, at.string(), log.string(), probe},
               90s);
  if (r.exit_code != 0) {
    return Error::PermissionDenied("mount as client: " + Describe(r) + "\n" + Tail(log, 1500));
  }
  return r.out;
}

Result<std::string> GlusterVolume::ReadFromBricksAsClient(const fs::path& cert, const fs::path& key,
                                                          const std::string& probe) {
  static int n = 0;
  const std::string name = "direct-" + std::to_string(n++);
  std::string vol =
      ReadFileOrEmpty(root_ / "wd" / "vols" / kVolume / (std::string(kVolume) + ".tcp-fuse.vol"));
  if (vol.empty()) return Error::Internal("no client volfile in glusterd's working directory");
  for (int i = 0; i < kBricks; ++i) {
    const auto args = Cmdline(BrickPid(i));
    auto port = std::find(args.begin(), args.end(), "--brick-port");
    if (port == args.end() || port + 1 == args.end()) {
      return Error::Internal("brick " + std::to_string(i) + " has no --brick-port");
    }
    const std::string block = "volume " + std::string(kVolume) + "-client-" + std::to_string(i);
    const auto at = vol.find(block + "\n");
    if (at == std::string::npos) return Error::Internal("no " + block + " in the volfile");
    const auto type_end = vol.find('\n', at + block.size() + 1);  // options follow `type`
    if (type_end == std::string::npos) return Error::Internal("truncated volfile");
    vol.insert(type_end + 1, "    option remote-port " + *(port + 1) + "\n");
  }
  for (const auto& [ours, theirs] : {std::pair{(tls_dir() / "node.pem").string(), cert.string()},
                                     std::pair{(tls_dir() / "node.key").string(), key.string()}}) {
    for (auto at = vol.find(ours); at != std::string::npos; at = vol.find(ours, at + 1)) {
      vol.replace(at, ours.size(), theirs);
    }
  }
  const fs::path volfile = root_ / (name + ".vol");
  const fs::path at = root_ / name;
  const fs::path log = root_ / "log" / (name + ".log");
  WriteFile(volfile, vol);
  fs::create_directories(at);
  const std::string script =
      "glusterfs --volfile=\"$1\" --log-file=\"$2\" \"$3\" || exit 32; cat \"$3/$4\"; rc=$?; "
      "umount \"$3\"; exit $rc";
  auto r = Run({"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script,
                "client", volfile.string(), log.string(), at.string(), probe},
               90s);
  if (r.exit_code != 0) {
    return Error::PermissionDenied("read from the bricks: " + Describe(r) + "\n" + Tail(log, 1500));
  }
  return r.out;
}

std::string GlusterVolume::Logs() const {
  std::string out = "--- glusterd:\n" + Tail(root_ / "log" / "glusterd.log");
  out += "--- mount:\n" + Tail(root_ / "log" / "mnt.log");
  for (int i = 0; i < kBricks; ++i) {
    std::string name = brick(i).string().substr(1);
    std::replace(name.begin(), name.end(), '/', '-');
    out += "--- brick " + std::to_string(i) + ":\n" + Tail(kBrickLogs / (name + ".log"), 1500);
  }
  return out;
}

}  // namespace halite::testing
