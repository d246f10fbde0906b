#include "pg_server.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

namespace halite::testing {
namespace {

std::optional<std::filesystem::path> FindBinDir() {
  std::error_code ec;
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const auto bin = entry.path() / "bin";
    if (std::filesystem::exists(bin / "postgres") && std::filesystem::exists(bin / "initdb")) {
      found.push_back(bin);
    }
  }
  if (found.empty()) return std::nullopt;
  // Highest major version ("15" > "13"; compare as numbers).
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::atoi(a.parent_path().filename().c_str()) <
           std::atoi(b.parent_path().filename().c_str());
  });
  return found.back();
}

std::string Tail(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// Forks and execs `argv` with output to `log`, as the postgres user when we are root. The
// child dies with this thread (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::filesystem::path& log,
                    const std::filesystem::path& cwd) {
  std::optional<std::pair<uid_t, gid_t>> user;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      return Error::FailedPrecondition("running as root and there is no 'postgres' user");
    }
    user.emplace(pw->pw_uid, pw->pw_gid);
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Error::Unavailable("open " + log.string());
  if (user && ::fchown(fd, user->first, user->second) != 0) {
    ::close(fd);
    return Error::Unavailable("chown " + log.string());
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return Error::Unavailable("fork");
  }
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setpgid(0, 0);
    if (user) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(user->second) != 0 ||
          ::setuid(user->first) != 0) {
        ::_exit(126);
      }
    }
    // After setuid: changing credentials clears the parent-death signal.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);
    if (::chdir(cwd.c_str()) != 0) ::_exit(124);
    ::unsetenv("PGDATA");
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// The exit status of `pid`, or nullopt when it is still running at the deadline.
std::optional<int> WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

Result<std::unique_ptr<PgServer>> PgServer::Create(const std::string& ip, int port) {
  const auto bin = FindBinDir();
  if (!bin) {
    return Error::FailedPrecondition(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): run tools/bootstrap");
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "halite-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return Error::Unavailable("mkdtemp " + pattern);
  std::unique_ptr<PgServer> server(new PgServer(pattern, *bin, ip, port));
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr || ::chown(pattern.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return Error::FailedPrecondition("cannot give " + pattern + " to the postgres user");
    }
  }
  HALITE_ASSIGN_OR_RETURN(
      pid_t initdb,
      Spawn({(*bin / "initdb").string(), "-D", (server->root_ / "data").string(), "-U", "halite",
             "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"},
            server->root_ / "initdb.log", server->root_));
  const auto code = WaitExit(initdb, std::chrono::seconds(120));
  if (!code || *code != 0) {
    if (!code) ::kill(initdb, SIGKILL), WaitExit(initdb, std::chrono::seconds(10));
    return Error::Internal("initdb failed: " + Tail(server->root_ / "initdb.log"));
  }
  HALITE_RETURN_IF_ERROR(server->Start());
  return server;
}

PgServer::~PgServer() {
  if (pid_ > 0) {
    Thaw();
    ::kill(pid_, SIGQUIT);  // immediate shutdown: the data is thrown away anyway
    if (!WaitExit(pid_, std::chrono::seconds(10))) {
      ::kill(pid_, SIGKILL);
      WaitExit(pid_, std::chrono::seconds(10));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

std::string PgServer::dsn() const {
  return "host=" + ip_ + " port=" + std::to_string(port_) +
         " user=halite dbname=postgres connect_timeout=5";
}

Status PgServer::Start() {
  if (pid_ > 0) return OkStatus();
  HALITE_ASSIGN_OR_RETURN(
      pid_, Spawn({(bin_ / "postgres").string(), "-D", (root_ / "data").string(), "-p",
                   std::to_string(port_), "-c", "listen_addresses=" + ip_, "-c",
                   "unix_socket_directories=" + root_.string(), "-c", "max_connections=100", "-c",
                   "shared_buffers=16MB", "-c", "log_min_messages=warning"},
                  root_ / "server.log", root_));
  // Ready when the server answers a ping (polled: the server has no other ready signal).
  const std::string conninfo = dsn();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Error::Internal("postgres exited at start: " + Tail(root_ / "server.log"));
    }
    if (PQping(conninfo.c_str()) == PQPING_OK) return OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Error::DeadlineExceeded("postgres did not accept connections: " +
                                 Tail(root_ / "server.log"));
}

Status PgServer::Crash() {
  if (pid_ <= 0) return OkStatus();
  ::kill(pid_, SIGQUIT);
  const auto code = WaitExit(pid_, std::chrono::seconds(30));
  if (!code) {
    ::kill(-pid_, SIGKILL);
    WaitExit(pid_, std::chrono::seconds(10));
  }
  pid_ = -1;
  return OkStatus();
}

// The postmaster and its children (each backend calls setsid, so a process group signal
// does not reach them).
std::vector<pid_t> ServerProcesses(pid_t postmaster) {
  std::vector<pid_t> pids = {postmaster};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("PPid:", 0) == 0) {
        if (std::atoi(line.c_str() + 5) == postmaster) pids.push_back(std::atoi(name.c_str()));
        break;
      }
    }
  }
  return pids;
}

void PgServer::Freeze() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);  // first, so that it forks no new children meanwhile
  for (pid_t pid : ServerProcesses(pid_)) ::kill(pid, SIGSTOP);
}

void PgServer::Thaw() {
  if (pid_ <= 0) return;
  for (pid_t pid : ServerProcesses(pid_)) ::kill(pid, SIGCONT);
}

Status PgServer::Stop() {
  if (pid_ <= 0) return OkStatus();
  ::kill(pid_, SIGINT);
  if (!WaitExit(pid_, std::chrono::seconds(60))) {
    ::kill(pid_, SIGKILL);
    WaitExit(pid_, std::chrono::seconds(10));
    pid_ = -1;
    return Error::DeadlineExceeded("postgres did not stop on SIGINT; killed");
  }
  pid_ = -1;
  return OkStatus();
}

}  // namespace halite::testing
