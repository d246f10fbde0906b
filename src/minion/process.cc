#include "halite/minion/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace halite::minion {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Error SpawnError(int err, std::string_view what) {
  return Error::Unavailable(std::string(what) + ": " + std::strerror(err));
}

// Reads what is available; returns false at EOF or on error.
bool ReadSome(int fd, std::string& out, std::size_t max_output) {
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      std::size_t room = out.size() < max_output ? max_output - out.size() : 0;
      out.append(buf, std::min(room, static_cast<std::size_t>(n)));
      if (static_cast<std::size_t>(n) < sizeof buf) return true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

}  // namespace

std::string RStrip(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t' || text.back() == '\v' || text.back() == '\f')) {
    text.pop_back();
  }
  return text;
}

Result<ProcessResult> RunShell(const ProcessOptions& o) {
  int out_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0) return SpawnError(errno, "pipe");
  Fd out_read(out_fds[0]), out_write(out_fds[1]);
  Fd err_read, err_write;
  if (!o.merge_stderr) {
    int err_fds[2];
    if (pipe2(err_fds, O_CLOEXEC) != 0) return SpawnError(errno, "pipe");
    err_read.Reset(err_fds[0]);
    err_write.Reset(err_fds[1]);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, o.merge_stderr ? out_write.get() : err_write.get(), 2);
  if (o.cwd) posix_spawn_file_actions_addchdir_np(&actions, o.cwd->c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);  // halite-swarm blocks SIGINT/SIGTERM
  posix_spawnattr_setsigdefault(&attr, &all);

  std::string command = o.command;
  char arg0[] = "sh";
  char arg1[] = "-c";
  char* argv[] = {arg0, arg1, command.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return SpawnError(rc, "cannot run /bin/sh" + (o.cwd ? " in " + *o.cwd : ""));
  out_write.Reset();
  err_write.Reset();
  fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  if (err_read.get() >= 0) fcntl(err_read.get(), F_SETFL, O_NONBLOCK);

  ProcessResult result;
  result.pid = pid;
  bool out_open = true;
  bool err_open = err_read.get() >= 0;
  bool exited = false;
  int status = 0;
  bool killed = false;
  Clock::time_point drain_until = Clock::time_point::max();
  for (;;) {
    if (!exited) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno == ECHILD)) exited = true;
    }
    if (exited && !out_open && !err_open) break;
    Clock::time_point now = Clock::now();
    bool cancelled = o.cancelled != nullptr && o.cancelled->load(std::memory_order_relaxed);
    if (!killed && (now >= o.deadline || cancelled)) {
      kill(-pid, SIGKILL);
      killed = true;
      result.timed_out = !cancelled;
      result.cancelled = cancelled;
      // Output still buffered is read; a grandchild that left the group may hold the pipes.
      drain_until = now + std::chrono::seconds(1);
    }
    if (exited && now >= drain_until) break;

    auto wait = std::chrono::milliseconds(50);
    if (!killed && o.deadline != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(o.deadline - now);
      if (left < wait) wait = std::max(left, std::chrono::milliseconds(0));
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_read.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_read.get(), POLLIN, 0};
    int ready = poll(fds, n, static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < n && ready > 0; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == out_read.get()) {
        out_open = ReadSome(fds[i].fd, result.stdout_text, o.max_output);
      } else {
        err_open = ReadSome(fds[i].fd, result.stderr_text, o.max_output);
      }
    }
  }
  if (!exited) {
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) {
    result.retcode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.retcode = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace halite::minion
