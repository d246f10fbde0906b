// Test harness for integration tests: real halite processes on loopback addresses.
// Each test gets its own temp dir and its own 127.x.y.z addresses (from the one allocator of
// tests/support/loopback.h), so tests can run in parallel without port clashes and without DNS.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loopback.h"

namespace halite::testing {

// A fresh directory under /tmp, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::filesystem::path BinaryPath(const std::string& name);  // build/<preset>/src/apps/<name>
void WriteFile(const std::filesystem::path& path, const std::string& content);
std::string ReadFileOrEmpty(const std::filesystem::path& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a program to completion (bounded by `timeout`; killed after it).
CommandResult Run(const std::vector<std::string>& argv,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A child process with its output in files; killed (SIGKILL) on destruction if still alive.
class Process {
 public:
  // `env`: "KEY=VALUE" entries added to the inherited environment.
  Process(std::vector<std::string> argv, std::filesystem::path log_file,
          const std::vector<std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  pid_t pid() const { return pid_; }
  bool Alive();
  // Sends `sig` and waits up to `timeout` for exit; returns the exit status or -1.
  int Stop(int sig = SIGTERM, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  std::string Log() const { return ReadFileOrEmpty(log_file_); }

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_file_;
  std::optional<int> status_;
};

// Polls `condition` until true or the deadline; returns whether it became true.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout = std::chrono::seconds(30),
             std::chrono::milliseconds step = std::chrono::milliseconds(50));

class MasterUnderTest;

// `halite -t <t> --out txt <target> <fun...>` on `master` until it exits 0 printing exactly
// `lines` lines (every targeted minion answered) or `timeout` passes. `last` gets the last
// output (stdout and stderr), for the failure message.
bool EveryMinionAnswers(MasterUnderTest& master, const std::string& target,
                        const std::vector<std::string>& fun, std::size_t lines, std::string* last,
                        std::chrono::seconds timeout = std::chrono::seconds(90));

// The value of the first line of http://ip:port/metrics that starts with `name` (a metric
// name with its labels, e.g. `halite_auth_total{master="m1",result="shed"}`).
std::optional<double> Metric(const std::string& ip, int port, const std::string& name);

struct MasterSpec {
  std::string id = "m1";
  std::string ip;
  bool auto_accept = false;
  std::string extra_yaml;  // appended to the config
  // Cluster mode: cachedir and cluster_pki_dir live in this shared folder.
  std::string cluster_id;
  std::vector<std::string> cluster_peers;
  std::filesystem::path shared_dir;
  // Reach shared_dir through a symlink in the master's own dir, so a test can make the
  // shared folder vanish for this master alone (BreakSharedDir).
  bool shared_via_link = false;
  int health_port = 0;
  // The YAML map under file_roots (indented two spaces); empty: base: [<dir>/states].
  std::string file_roots;
  // The same for pillar_roots; empty: base: [<dir>/pillar].
  std::string pillar_roots;
  // "KEY=VALUE" entries added to the master's environment (NOTIFY_SOCKET, WATCHDOG_USEC).
  std::vector<std::string> env;
  // A config file the test wrote itself (a Salt master's, say), used as it is: nothing above
  // but id and ip is written then, and `sock_dir` must name the config's sock_dir (the
  // harness waits on the request socket there). Empty: the harness writes the config.
  std::filesystem::path config_file;
  std::filesystem::path sock_dir;
};

// One halite-master with its own dirs under `root`.
class MasterUnderTest {
 public:
  MasterUnderTest(const std::filesystem::path& root, MasterSpec spec);
  ~MasterUnderTest();
  // Starts the process and waits until its request socket answers.
  void Start();
  // Start() in two halves, to start several masters at the same instant.
  void StartAsync();
  void WaitReady();
  bool Alive() { return process_ && process_->Alive(); }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  const std::string& id() const { return spec_.id; }
  int Stop(int sig = SIGTERM);
  void Kill();
  const std::filesystem::path& config() const { return config_; }
  const std::filesystem::path& dir() const { return dir_; }
  const std::string& ip() const { return spec_.ip; }
  std::string Log() const;
  // Points this master's link to the shared folder at nothing (shared_via_link only).
  void BreakSharedDir();
  // halite / halite-key / halite-run against this master.
  CommandResult Cli(const std::string& tool, const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

 private:
  std::filesystem::path SharedRoot() const;
  std::filesystem::path SockDir() const;
  std::filesystem::path dir_;
  std::filesystem::path config_;
  MasterSpec spec_;
  std::unique_ptr<Process> process_;
};

struct MinionSpec {
  std::string id;
  std::string master_ip;
  int master_port = 4506;
  int protocol = 3;
  std::string extra_yaml;
};

// HAProxy in front of masters, from `halite-run cluster.haproxy_config`.
class HaproxyUnderTest {
 public:
  // The config is cluster.haproxy_config's on `any_master`, with `extra_args` (such as
  // stats_socket=PATH) added.
  HaproxyUnderTest(const std::filesystem::path& root, MasterUnderTest& any_master,
                   const std::string& front_ip, const std::vector<std::string>& extra_args = {});
  ~HaproxyUnderTest();
  void Start();
  const std::string& ip() const { return front_ip_; }
  std::string Log() const;
  std::string Config() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string front_ip_;
  std::unique_ptr<Process> process_;
};

// One halite-minion process with its own pki dir.
class MinionUnderTest {
 public:
  MinionUnderTest(const std::filesystem::path& root, MinionSpec spec);
  void Start();
  int Stop(int sig = SIGTERM);
  void Kill();
  bool Alive();
  std::string Log() const;
  const std::filesystem::path& dir() const { return dir_; }
  // Stops the minion and starts it again against `master_ip`, keeping its directory (its key
  // and the master key it pinned): a minion that moves to another master.
  void MoveTo(const std::string& master_ip);

 private:
  void WriteConfig();
  std::filesystem::path dir_;
  std::filesystem::path config_;
  MinionSpec spec_;
  std::unique_ptr<Process> process_;
};

// Starts minion `id` (dirs under `root`) pointed at `master_ip`, kept in `into`.
MinionUnderTest& StartMinion(const std::filesystem::path& root, const std::string& id,
                             const std::string& master_ip,
                             std::vector<std::unique_ptr<MinionUnderTest>>& into);

}  // namespace halite::testing
