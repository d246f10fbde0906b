#include "harness.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;
#include <zmq.hpp>

#include "halite/wire/msgpack.h"

namespace halite::testing {

namespace {
std::atomic<int> dir_counter{0};
}  // namespace

TempDir::TempDir() {
  path_ = std::filesystem::path("/tmp") /
          ("halite-it-" + std::to_string(::getpid()) + "-" + std::to_string(dir_counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  if (std::getenv("HALITE_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

std::filesystem::path BinaryPath(const std::string& name) {
  return std::filesystem::path(HALITE_BINARY_DIR) / "src" / "apps" / name;
}

void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string ReadFileOrEmpty(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// `env`: "KEY=VALUE" entries added to (or replacing in) this process's environment.
pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
            const std::vector<std::string>& env = {}) {
  // Built before fork: the child only execs.
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& extra : env) replaced |= extra.substr(0, extra.find('=')) == key;
    if (!replaced) environment.push_back(std::move(entry));
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::setpgid(0, 0);
    // Children die with the test process, even when it is killed by a timeout.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::execve(args[0], args.data(), envp.data());
    std::perror("execve");
    ::_exit(127);
  }
  return pid;
}

std::optional<int> WaitPid(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

CommandResult Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  static std::atomic<int> n{0};
  std::string base = "/tmp/halite-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  int out_fd = ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err_fd = ::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = Spawn(argv, out_fd, err_fd);
  ::close(out_fd);
  ::close(err_fd);
  CommandResult result;
  auto code = WaitPid(pid, timeout);
  if (!code) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    code = WaitPid(pid, std::chrono::seconds(10));
    result.err = "[killed after timeout]\n";
  }
  result.exit_code = code.value_or(-1);
  result.out = ReadFileOrEmpty(base + ".out");
  result.err += ReadFileOrEmpty(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return result;
}

Process::Process(std::vector<std::string> argv, std::filesystem::path log_file,
                 const std::vector<std::string>& env)
    : log_file_(std::move(log_file)) {
  std::filesystem::create_directories(log_file_.parent_path());
  int fd = ::open(log_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  pid_ = Spawn(argv, fd, fd, env);
  ::close(fd);
}

Process::~Process() {
  if (Alive()) Stop(SIGKILL, std::chrono::seconds(10));
}

bool Process::Alive() {
  if (status_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

int Process::Stop(int sig, std::chrono::milliseconds timeout) {
  if (status_) return *status_;
  ::kill(pid_, sig);
  auto code = WaitPid(pid_, timeout);
  if (!code) {
    ::kill(pid_, SIGKILL);
    code = WaitPid(pid_, std::chrono::seconds(10));
  }
  status_ = code.value_or(-1);
  return *status_;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
             std::chrono::milliseconds step) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(step);
  }
  return condition();
}

MasterUnderTest::MasterUnderTest(const std::filesystem::path& root, MasterSpec spec)
    : dir_(root / spec.id), spec_(std::move(spec)) {
  std::filesystem::create_directories(dir_);
  if (spec_.shared_via_link) {
    std::filesystem::create_directories(spec_.shared_dir);
    std::error_code ec;
    std::filesystem::remove(dir_ / "shared-link", ec);
    std::filesystem::create_directory_symlink(spec_.shared_dir, dir_ / "shared-link");
  }
  if (spec_.ip.empty()) spec_.ip = UniqueLoopbackIp();
  std::filesystem::remove(SockDir() / "halite_req.ipc");
  if (!spec_.config_file.empty()) {
    config_ = spec_.config_file;
    return;
  }
  config_ = dir_ / "master.conf";
  std::ostringstream c;
  c << "id: " << spec_.id << "\n"
    << "interface: " << spec_.ip << "\n"
    << "publish_port: 4505\nret_port: 4506\n"
    << "pki_dir: " << (dir_ / "pki").string() << "\n"
    << "cachedir: " << (SharedRoot() / "cache").string() << "\n"
    << "sock_dir: " << (dir_ / "sock").string() << "\n"
    << "log_level: debug\n"
    << "health_port: " << spec_.health_port << "\n"
    << "loop_interval: 1\n"
    << "auto_accept: " << (spec_.auto_accept ? "true" : "false") << "\n"
    << "pillar_roots:\n"
    << (spec_.pillar_roots.empty() ? "  base: [" + (dir_ / "pillar").string() + "]\n"
                                   : spec_.pillar_roots)
    << "file_roots:\n"
    << (spec_.file_roots.empty() ? "  base: [" + (dir_ / "states").string() + "]\n"
                                 : spec_.file_roots)
    << spec_.extra_yaml << "\n";
  if (!spec_.cluster_id.empty()) {
    c << "cluster_id: " << spec_.cluster_id << "\n"
      << "cluster_pki_dir: " << (SharedRoot() / "pki").string() << "\n"
      << "cluster_peers:\n";
    for (const auto& peer : spec_.cluster_peers) c << "  - " << peer << "\n";
  }
  WriteFile(config_, c.str());
}

MasterUnderTest::~MasterUnderTest() {
  if (process_) process_->Stop(SIGKILL);
}

void MasterUnderTest::Start() {
  StartAsync();
  WaitReady();  // ready when the local request socket answers a clear ping
}

void MasterUnderTest::StartAsync() {
  // One process per master: a second one would share its keys, ports and log.
  if (process_ && process_->Alive()) {
    throw std::logic_error("harness: master " + spec_.id + " is already running");
  }
  process_ = std::make_unique<Process>(
      std::vector<std::string>{BinaryPath("halite-master").string(), "-c", config_.string()},
      dir_ / "master.log", spec_.env);
}

void MasterUnderTest::WaitReady() {
  const std::string endpoint = "ipc://" + (SockDir() / "halite_req.ipc").string();
  bool ready = WaitFor([&] {
    if (!process_->Alive()) return true;
    if (!std::filesystem::exists(SockDir() / "halite_req.ipc")) return false;
    zmq::context_t ctx;
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.connect(endpoint);
    wire::Value ping = wire::Value::MapOf(
        {{"enc", "clear"}, {"load", wire::Value::MapOf({{"cmd", "ping"}})}, {"version", 3}});
    std::string body = wire::Pack(ping);
    req.send(zmq::buffer(body));
    zmq::pollitem_t item{static_cast<void*>(req), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(500));
    return (item.revents & ZMQ_POLLIN) != 0;
  });
  if (!ready || !process_->Alive()) {
    std::cerr << "master " << spec_.id << " did not start:\n" << Log() << std::endl;
    throw std::runtime_error("harness: see the output above");
  }
}

std::filesystem::path MasterUnderTest::SharedRoot() const {
  if (spec_.shared_dir.empty()) return dir_;
  return spec_.shared_via_link ? dir_ / "shared-link" : spec_.shared_dir;
}

std::filesystem::path MasterUnderTest::SockDir() const {
  return spec_.sock_dir.empty() ? dir_ / "sock" : spec_.sock_dir;
}

void MasterUnderTest::BreakSharedDir() {
  std::filesystem::remove(dir_ / "shared-link");
  std::filesystem::create_directory_symlink(dir_ / "no-such-dir", dir_ / "shared-link");
}

HaproxyUnderTest::HaproxyUnderTest(const std::filesystem::path& root, MasterUnderTest& any_master,
                                   const std::string& front_ip,
                                   const std::vector<std::string>& extra_args)
    : dir_(root / "haproxy"), front_ip_(front_ip) {
  std::vector<std::string> args{"cluster.haproxy_config", "bind=" + front_ip, "maxconn=2000"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto generated = any_master.Cli("halite-run", args);
  if (generated.exit_code != 0) {
    std::cerr << "cannot generate the HAProxy config: " << generated.err << std::endl;
    throw std::runtime_error("harness: see the output above");
  }
  WriteFile(dir_ / "haproxy.cfg", generated.out);
}

HaproxyUnderTest::~HaproxyUnderTest() {
  if (process_) process_->Stop(SIGKILL);
}

void HaproxyUnderTest::Start() {
  process_ = std::make_unique<Process>(
      std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f", (dir_ / "haproxy.cfg").string()},
      dir_ / "haproxy.log");
  bool listening = WaitFor([&] {
    if (!process_->Alive()) return true;
    auto r = Run({"/bin/bash", "-c", "exec 3<>/dev/tcp/" + front_ip_ + "/4506"}, 5s);
    return r.exit_code == 0;
  });
  if (!listening || !process_->Alive()) {
    std::cerr << "haproxy did not start:\n" << Log() << std::endl;
    throw std::runtime_error("harness: see the output above");
  }
}

std::string HaproxyUnderTest::Log() const { return ReadFileOrEmpty(dir_ / "haproxy.log"); }
std::string HaproxyUnderTest::Config() const { return ReadFileOrEmpty(dir_ / "haproxy.cfg"); }

int MasterUnderTest::Stop(int sig) { return process_ ? process_->Stop(sig) : -1; }
void MasterUnderTest::Kill() {
  if (process_) process_->Stop(SIGKILL);
}
std::string MasterUnderTest::Log() const { return ReadFileOrEmpty(dir_ / "master.log"); }

CommandResult MasterUnderTest::Cli(const std::string& tool, const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{BinaryPath(tool).string(), "-c", config_.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout);
}

MinionUnderTest& StartMinion(const std::filesystem::path& root, const std::string& id,
                             const std::string& master_ip,
                             std::vector<std::unique_ptr<MinionUnderTest>>& into) {
  MinionSpec spec;
  spec.id = id;
  spec.master_ip = master_ip;
  into.push_back(std::make_unique<MinionUnderTest>(root, spec));
  into.back()->Start();
  return *into.back();
}

MinionUnderTest::MinionUnderTest(const std::filesystem::path& root, MinionSpec spec)
    : dir_(root / ("minion-" + spec.id)), spec_(std::move(spec)) {
  config_ = dir_ / "minion.conf";
  WriteConfig();
}

void MinionUnderTest::WriteConfig() {
  std::ostringstream c;
  c << "id: " << spec_.id << "\n"
    << "master: " << spec_.master_ip << "\n"
    << "master_port: " << spec_.master_port << "\n"
    << "pki_dir: " << (dir_ / "pki").string() << "\n"
    << "cachedir: " << (dir_ / "cache").string() << "\n"
    << "sock_dir: " << (dir_ / "sock").string() << "\n"
    << "log_level: debug\n"
    << "acceptance_wait_time: 1\n"
    << "auth_timeout: 5\n"
    << "request_protocol_version: " << spec_.protocol << "\n"
    << spec_.extra_yaml << "\n";
  WriteFile(config_, c.str());
}

void MinionUnderTest::MoveTo(const std::string& master_ip) {
  Stop();
  spec_.master_ip = master_ip;
  WriteConfig();
  Start();
}

void MinionUnderTest::Start() {
  process_ = std::make_unique<Process>(
      std::vector<std::string>{BinaryPath("halite-minion").string(), "-c", config_.string()},
      dir_ / "minion.log");
}

int MinionUnderTest::Stop(int sig) { return process_ ? process_->Stop(sig) : -1; }
void MinionUnderTest::Kill() {
  if (process_) process_->Stop(SIGKILL);
}
bool MinionUnderTest::Alive() { return process_ && process_->Alive(); }
std::string MinionUnderTest::Log() const { return ReadFileOrEmpty(dir_ / "minion.log"); }

bool EveryMinionAnswers(MasterUnderTest& master, const std::string& target,
                        const std::vector<std::string>& fun, std::size_t lines, std::string* last,
                        std::chrono::seconds timeout) {
  return WaitFor(
      [&] {
        std::vector<std::string> args{"-t", "5", "--out", "txt", target};
        args.insert(args.end(), fun.begin(), fun.end());
        auto r = master.Cli("halite", args);
        *last = r.out + r.err;
        return r.exit_code == 0 &&
               static_cast<std::size_t>(std::count(r.out.begin(), r.out.end(), '\n')) == lines;
      },
      timeout, std::chrono::milliseconds(500));
}

std::optional<double> Metric(const std::string& ip, int port, const std::string& name) {
  auto r = halite::testing::Run({"/usr/bin/curl", "-s", "--max-time", "5",
                                 "http://" + ip + ":" + std::to_string(port) + "/metrics"});
  std::size_t at = 0;
  while ((at = r.out.find(name, at)) != std::string::npos) {
    if (at == 0 || r.out[at - 1] == '\n') {
      const auto space = r.out.find(' ', at);
      const auto end = r.out.find('\n', at);
      if (space != std::string::npos && space < end) {
        return std::stod(r.out.substr(space + 1, end - space - 1));
      }
    }
    at += name.size();
  }
  return std::nullopt;
}

}  // namespace halite::testing
