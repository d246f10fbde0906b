// The renderer pool: halite-render children, one request at a time each, over a pair of
// pipes. A caller takes an idle renderer (or starts one, up to `processes`), writes one frame,
// and reads one frame back before the deadline. A renderer that misses the deadline is killed;
// one that dies is reaped; either way the next request starts a fresh one. The master never
// runs Python.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "halite/common/result.h"
#include "halite/render/renderer.h"

namespace halite::render {
namespace {

using Clock = std::chrono::steady_clock;

// How long a fresh renderer may take to load CPython and Jinja2 (render_timeout if longer).
constexpr std::chrono::milliseconds kStartTimeout{30'000};

struct Child {
  pid_t pid = -1;
  int fd = -1;  // our end of a socketpair; the child has the other as stdin and stdout
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// Kills (if asked) and reaps a child; returns how it ended.
std::string Reap(Child& c, bool kill_first) {
  CloseFd(c.fd);
  if (c.pid <= 0) return "not running";
  if (kill_first) ::kill(c.pid, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(c.pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  c.pid = -1;
  return r < 0 ? std::string("lost") : DescribeExit(status);
}

Result<Child> Spawn(const PoolOptions& opt) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Error::Unavailable("renderer: socketpair: " + std::string(strerror(errno)));
  }
  // A sanitizer's shadow memory is address space too: under ASan or TSan no RLIMIT_AS.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const rlim_t as = 0;
#else
  const rlim_t as = opt.memory_limit_bytes;
#endif
  const pid_t parent = ::getpid();
  const char* prog = opt.program.c_str();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return Error::Unavailable("renderer: fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(71);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    sigset_t none;  // the master blocks its signals for sigwait; a renderer must not inherit that
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (as > 0) {
      struct rlimit lim {
        as, as
      };
      ::setrlimit(RLIMIT_AS, &lim);
    }
    struct rlimit core {
      0, 0
    };
    ::setrlimit(RLIMIT_CORE, &core);
    ::dup2(sv[1], 0);
    ::dup2(sv[1], 1);
    ::close_range(3, ~0U, 0);
    char* const argv[] = {const_cast<char*>(prog), nullptr};
    ::execv(prog, argv);
    ::_exit(127);
  }
  ::close(sv[1]);
  return Child{pid, sv[0]};
}

// Waits for fd to be ready for `events` until the deadline.
Status WaitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Error::DeadlineExceeded("deadline");
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Error::Unavailable(std::string("poll: ") + strerror(errno));
    if (r == 0) continue;
    if (p.revents & (events | POLLHUP | POLLERR)) return OkStatus();
  }
}

Status WriteAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    if (auto st = WaitFd(fd, POLLOUT, deadline); !st.ok()) return st;
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Error::Unavailable(std::string("write: ") + strerror(errno));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return OkStatus();
}

Status ReadExact(int fd, std::size_t n, std::string& out, Clock::time_point deadline) {
  out.resize(n);
  std::size_t got = 0;
  while (got < n) {
    if (auto st = WaitFd(fd, POLLIN, deadline); !st.ok()) return st;
    ssize_t r = ::read(fd, out.data() + got, n - got);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r == 0) return Error::Unavailable("end of stream");
    if (r < 0) return Error::Unavailable(std::string("read: ") + strerror(errno));
    got += static_cast<std::size_t>(r);
  }
  return OkStatus();
}

wire::Value StringList(const std::vector<std::string>& items) {
  wire::Array a;
  for (const auto& s : items) a.emplace_back(s);
  return wire::Value(std::move(a));
}

class ProcessPool final : public Renderer {
 public:
  ProcessPool(PoolOptions options, RenderSettings settings)
      : opt_(std::move(options)), settings_(std::move(settings)) {
    if (opt_.processes < 1) opt_.processes = 1;
    spawner_ = std::thread([this] { SpawnerLoop(); });
  }

  ~ProcessPool() override {
    {
      std::lock_guard lock(spawn_mu_);
      spawner_stop_ = true;
    }
    spawn_cv_.notify_all();
    if (spawner_.joinable()) spawner_.join();
    std::lock_guard lock(mu_);
    for (auto& c : idle_) Reap(c, true);
    idle_.clear();
  }

  Result<wire::Value> Render(const RenderRequest& r) override {
    wire::Value req = Base("render");
    req.Set("file", r.file);
    req.Set("searchpath", StringList(r.searchpath));
    req.Set("saltenv", r.saltenv);
    req.Set("sls", r.sls);
    req.Set("context", r.context.is_map() ? r.context : wire::Value::EmptyMap());
    renders_++;
    auto result = Exchange(req, &r.host);
    if (!result.ok() && result.error().code == ErrorCode::kInvalidArgument) failures_++;
    return result;
  }

  Status Check(const std::string& file, const std::vector<std::string>& searchpath) override {
    wire::Value req = Base("check");
    req.Set("file", file);
    req.Set("searchpath", StringList(searchpath));
    auto result = Exchange(req);
    if (!result.ok()) return result.error();
    return OkStatus();
  }

  Result<wire::Value> ExtPillar(const std::string& name, const std::string& minion_id,
                                const wire::Value& args,
                                const std::vector<std::string>& nodegroups) override {
    wire::Value req = Base("ext_pillar");
    req.Set("name", name);
    req.Set("minion_id", minion_id);
    req.Set("args", args);
    req.Set("nodegroups", StringList(nodegroups));
    return Exchange(req);
  }

  Result<wire::Value> TestOp(const std::string& op) {
    if (!opt_.allow_test_ops) return Error::PermissionDenied("test ops are off");
    wire::Value req = Base(op);
    req.Set("allow_test_ops", true);
    return Exchange(req);
  }

  PoolStats Stats() const {
    return PoolStats{renders_.load(), failures_.load(), timeouts_.load(), crashes_.load(),
                     spawns_.load()};
  }

 private:
  wire::Value Base(const std::string& op) const {
    wire::Value req = wire::Value::MapOf({{"op", op}});
    req.Set("renderer", settings_.renderer);
    req.Set("renderer_blacklist", StringList(settings_.renderer_blacklist));
    req.Set("renderer_whitelist", StringList(settings_.renderer_whitelist));
    if (settings_.jinja_env.is_map()) req.Set("jinja_env", settings_.jinja_env);
    if (settings_.jinja_sls_env.is_map()) req.Set("jinja_sls_env", settings_.jinja_sls_env);
    req.Set("allow_undefined", settings_.allow_undefined);
    req.Set("allow_cmd_run", settings_.allow_cmd_run);
    req.Set("cmd_timeout",
            static_cast<long long>(
                std::chrono::duration_cast<std::chrono::seconds>(opt_.timeout).count()));
    if (!settings_.gpg_keydir.empty()) req.Set("gpg_keydir", settings_.gpg_keydir);
    req.Set("max_output", static_cast<unsigned long long>(opt_.max_output_bytes));
    return req;
  }

  Result<Child> Acquire(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    for (;;) {
      if (!idle_.empty()) {
        Child c = idle_.back();
        idle_.pop_back();
        return c;
      }
      if (live_ < opt_.processes) {
        live_++;
        lock.unlock();
        auto c = SpawnOnSpawner();
        spawns_++;
        // The start-up is waited for on the caller's thread, so renderers start side by side
        // (the spawner thread only forks).
        if (c.ok()) {
          if (Status ready = AwaitReady(*c); !ready.ok()) {
            const std::string how = Reap(*c, true);
            spdlog::warn("renderer did not start: {} ({})", ready.error().message, how);
            c = Error::Unavailable("renderer did not start: " + ready.error().message + " (" + how +
                                   ")");
          }
        }
        if (!c.ok()) {
          lock.lock();
          live_--;
          cv_.notify_one();
          return c.error();
        }
        return c;
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
          live_ >= opt_.processes) {
        return Error::DeadlineExceeded("every renderer was busy until the deadline");
      }
    }
  }

  // Renderers are forked by one thread that lives as long as the pool: PR_SET_PDEATHSIG fires
  // when the forking *thread* ends, and callers' threads come and go.
  void SpawnerLoop() {
    std::unique_lock lock(spawn_mu_);
    for (;;) {
      spawn_cv_.wait(lock, [&] { return spawner_stop_ || !spawn_queue_.empty(); });
      if (spawner_stop_) {
        for (auto* req : spawn_queue_) {
          req->result = Error::Unavailable("renderer pool stopping");
          req->done = true;
        }
        spawn_queue_.clear();
        spawn_cv_.notify_all();
        return;
      }
      SpawnRequest* req = spawn_queue_.front();
      spawn_queue_.erase(spawn_queue_.begin());
      lock.unlock();
      auto child = Spawn(opt_);
      lock.lock();
      req->result = std::move(child);
      req->done = true;
      spawn_cv_.notify_all();
    }
  }

  Result<Child> SpawnOnSpawner() {
    SpawnRequest req;
    std::unique_lock lock(spawn_mu_);
    if (spawner_stop_) return Error::Unavailable("renderer pool stopping");
    spawn_queue_.push_back(&req);
    spawn_cv_.notify_all();
    spawn_cv_.wait(lock, [&] { return req.done; });
    return std::move(req.result);
  }

  void Release(Child c) {
    std::lock_guard lock(mu_);
    idle_.push_back(c);
    cv_.notify_one();
  }

  // Kills (if asked) and reaps a renderer that cannot serve again, frees its slot; returns
  // how it ended.
  std::string Discard(Child& c, bool kill_first, const std::string& why) {
    std::string how = Reap(c, kill_first);
    spdlog::warn("renderer {}: {} ({})", why, how, opt_.program);
    std::lock_guard lock(mu_);
    live_--;
    cv_.notify_one();
    return how;
  }

  static std::string Frame(const wire::Value& v) {
    std::string body = wire::Pack(v, wire::Packing::kBinType);
    std::string frame(4, '\0');
    const auto n = static_cast<std::uint32_t>(body.size());
    frame[0] = static_cast<char>(n >> 24);
    frame[1] = static_cast<char>(n >> 16);
    frame[2] = static_cast<char>(n >> 8);
    frame[3] = static_cast<char>(n);
    return frame + body;
  }

  // A fresh renderer's first frame is {"ready": true}, written once CPython and Jinja2 are
  // loaded: its start-up (seconds on a loaded machine) is waited for here, not charged to the
  // first file's render_timeout. Bounded all the same: a renderer that hangs starting is killed.
  Status AwaitReady(const Child& c) {
    const auto deadline =
        Clock::now() + std::max<std::chrono::milliseconds>(opt_.timeout, kStartTimeout);
    std::string frame;
    HALITE_RETURN_IF_ERROR(ReadFrame(c, frame, deadline));
    auto hello = wire::Unpack(frame);
    if (!hello.ok() || !hello->is_map() || hello->Find("ready") == nullptr) {
      return Error::Unavailable("its first frame was not the ready frame");
    }
    return OkStatus();
  }

  // One frame from the renderer: its answer, or a call to the host (a map with "call").
  Status ReadFrame(const Child& c, std::string& frame, Clock::time_point deadline) {
    std::string header;
    if (auto st = ReadExact(c.fd, 4, header, deadline); !st.ok()) return st;
    const std::size_t size =
        (static_cast<std::size_t>(static_cast<unsigned char>(header[0])) << 24) |
        (static_cast<std::size_t>(static_cast<unsigned char>(header[1])) << 16) |
        (static_cast<std::size_t>(static_cast<unsigned char>(header[2])) << 8) |
        static_cast<std::size_t>(static_cast<unsigned char>(header[3]));
    if (size > opt_.max_output_bytes + 4096) {
      return Error::ResourceExhausted("renderer: rendered data over " +
                                      std::to_string(opt_.max_output_bytes) + " bytes");
    }
    return ReadExact(c.fd, size, frame, deadline);
  }

  // The answer to a renderer's call to the host, as a frame.
  std::string AnswerCall(const wire::Value& call, const HostCall* host, int& calls) {
    const std::string* name = call.FindStr("call");
    const wire::Value* args = call.Find("args");
    Result<wire::Value> out = Error::Unavailable("no host functions");
    if (!name) {
      out = Error::InvalidArgument("a call without a name");
    } else if (!host || !*host) {
      out = Error::Unavailable("salt['" + *name + "'] needs the master, which this render has not");
    } else if (++calls > opt_.max_host_calls) {
      out = Error::ResourceExhausted("more than " + std::to_string(opt_.max_host_calls) +
                                     " calls to the master in one file");
    } else {
      out = (*host)(*name, args && args->is_map() ? *args : wire::Value::EmptyMap());
    }
    if (out.ok()) return Frame(wire::Value::MapOf({{"ok", true}, {"data", std::move(*out)}}));
    return Frame(wire::Value::MapOf({{"ok", false}, {"error", out.error().message}}));
  }

  Result<wire::Value> Exchange(const wire::Value& req, const HostCall* host = nullptr) {
    const std::string frame = Frame(req);
    // Waiting for a busy pool is bounded by render_timeout, and so is the file itself, from the
    // moment a ready renderer has it: neither a queue nor a renderer's start-up is charged to it.
    auto child = Acquire(Clock::now() + opt_.timeout);
    if (!child.ok()) return Error{child.error().code, "renderer: " + child.error().message};
    Child c = *child;
    const auto deadline = Clock::now() + opt_.timeout;

    wire::UnpackLimits limits;
    limits.max_depth = 128;
    limits.max_bytes = opt_.max_output_bytes + 4096;
    std::string answer;
    Status st = WriteAll(c.fd, frame, deadline);
    Result<wire::Value> value = Error::Internal("no answer");
    int calls = 0;
    while (st.ok()) {
      answer.clear();
      st = ReadFrame(c, answer, deadline);
      if (!st.ok()) break;
      value = wire::Unpack(answer, limits);
      if (!value.ok() || !value->is_map() || !value->Find("call") || value->Find("ok")) break;
      // The template needs the master mid-render: answer, then read on (same deadline).
      st = WriteAll(c.fd, AnswerCall(*value, host, calls), deadline);
    }
    if (!st.ok()) {
      if (st.error().code == ErrorCode::kResourceExhausted) {
        Discard(c, true, "answered with an oversized frame");
        return st.error();
      }
      if (st.error().code == ErrorCode::kDeadlineExceeded) {
        timeouts_++;
        Discard(c, true, "missed its deadline and was killed");
        return Error::DeadlineExceeded(
            "render timed out after " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(opt_.timeout).count()) +
            " ms; the renderer was killed");
      }
      crashes_++;
      const std::string how = Discard(c, true, "died mid-request (" + st.error().message + ")");
      return Error::Unavailable("the renderer died (" + how + ")");
    }
    Release(c);

    if (!value.ok()) return Error::Internal("renderer answer: " + value.error().message);
    const wire::Value* ok = value->Find("ok");
    if (ok && ok->boolean().value_or(false)) {
      const wire::Value* data = value->Find("data");
      return data ? *data : wire::Value();
    }
    const std::string* msg = value->FindStr("error");
    std::string text = msg ? *msg : std::string("the renderer gave no reason");
    if (const std::string* detail = value->FindStr("detail")) {
      spdlog::debug("renderer traceback: {}", *detail);
    }
    return Error::InvalidArgument(std::move(text));
  }

  struct SpawnRequest {
    Result<Child> result = Error::Unavailable("not spawned");
    bool done = false;
  };

  PoolOptions opt_;
  const RenderSettings settings_;
  std::mutex spawn_mu_;
  std::condition_variable spawn_cv_;
  std::vector<SpawnRequest*> spawn_queue_;
  bool spawner_stop_ = false;
  std::thread spawner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Child> idle_;
  int live_ = 0;
  std::atomic<std::uint64_t> renders_{0}, failures_{0}, timeouts_{0}, crashes_{0}, spawns_{0};
};

}  // namespace

std::string DefaultRendererProgram() {
  // Next to the running program first (the build tree, where the tests run it), then where
  // `cmake --install` put it (HALITE_INSTALLED_RENDER_PROGRAM, set in src/render/CMakeLists.txt).
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "halite-render";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return HALITE_INSTALLED_RENDER_PROGRAM;
}

std::unique_ptr<Renderer> MakeProcessPool(PoolOptions options, RenderSettings settings) {
  if (options.program.empty()) options.program = DefaultRendererProgram();
  return std::make_unique<ProcessPool>(std::move(options), std::move(settings));
}

PoolStats StatsOf(const Renderer& renderer) {
  if (auto* p = dynamic_cast<const ProcessPool*>(&renderer)) return p->Stats();
  return {};
}

Result<wire::Value> SendTestOp(Renderer& renderer, const std::string& op) {
  if (auto* p = dynamic_cast<ProcessPool*>(&renderer)) return p->TestOp(op);
  return Error::FailedPrecondition("not a process pool");
}

}  // namespace halite::render
