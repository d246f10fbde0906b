// halite-swarm: N simulated minions in one process (real keys, real crypto, one request and
// one subscribe connection each), for tests and benchmarks against halite-master or a stock
// salt-master. A few ZmqLoop threads each carry a share of the minions; RSA runs on a worker
// pool. Progress every --status-interval seconds, a summary at the end.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "halite/common/logging.h"
#include "halite/minion/grains.h"
#include "halite/minion/keys.h"
#include "halite/minion/minion.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/version.h"

namespace {

using namespace std::chrono_literals;
using halite::minion::Minion;
using halite::minion::MinionMetrics;
using halite::minion::MinionOptions;
using halite::wire::Value;
using Clock = std::chrono::steady_clock;

struct SwarmOptions {
  std::string master_ip;
  std::uint16_t port = 4506;
  std::uint16_t pub_port = 0;
  int count = 100;
  std::string prefix = "swarm-";
  int start_index = 0;
  double ramp = 100;  // sign-ins started per second; 0: all at once
  std::filesystem::path keys_dir = "swarm-keys";
  int keysize = 2048;
  std::vector<std::pair<std::string, std::string>> grains;
  std::vector<std::pair<std::string, std::vector<std::string>>> grains_cycle;
  int latency_ms = 0;
  int protocol = 3;
  double duration = 0;  // seconds; 0: until SIGINT/SIGTERM
  double status_interval = 5;
  int loops = 2;
  int workers = 2;       // crypto pool
  int exec_workers = 4;  // cmd.run & co
  int io_threads = 1;
  double job_timeout = 0;
  double acceptance_wait = 10;
  double auth_timeout = 5;
  double return_timeout = 5;
  double random_reauth_delay = 0;
  int idle_close_ms = -1;  // -1: automatic (on when the fd limit is short)
  bool forget_master_key = false;
  std::string log_level = "error";
  std::string log_file;
};

void Usage() {
  std::cerr <<
      R"(usage: halite-swarm --master IP [options]
  --master IP            master address (never resolved)
  --port N               request port (4506)
  --pub-port N           publish port; 0: the one the master sends (0)
  --count N              number of minions (100)
  --prefix S             minion id prefix (swarm-); ids are <prefix><index>
  --start-index N        first index (0)
  --ramp R               sign-ins started per second, 0: all at once (100)
  --keys-dir DIR         per-minion pki dirs, keys made once and reused (./swarm-keys)
  --keysize BITS         size of newly made keys (2048)
  --grains K=V           static grain for every minion (repeatable)
  --grains-cycle K=A,B   grain K set to A, B, A, ... across minions (repeatable)
  --latency-ms N         extra time every job takes before it returns (0)
  --protocol 2|3         request protocol version (3)
  --duration S           stop after S seconds; 0: run until SIGINT/SIGTERM (0)
  --status-interval S    progress line period (5)
  --loops N              loop threads carrying the minions (2)
  --workers N            RSA worker threads (2)
  --exec-workers N       threads for blocking functions such as cmd.run (4)
  --io-threads N         ZeroMQ I/O threads (1)
  --job-timeout S        kill jobs running longer; 0: none (0)
  --acceptance-wait S    wait between sign-ins while a key is pending (10)
  --auth-timeout S       sign-in timeout per try (5)
  --return-timeout S     _return timeout per try, random up to twice this (5)
  --random-reauth-delay S  after a master key change, sign in again within S s (0)
  --idle-close-ms N      close idle request sockets after N ms; -1: only when fds are short
  --forget-master-key    drop cached minion_master.pub files first (switching masters)
  --log-level L          (error)   --log-file PATH
  --version
)";
}

template <typename T>
bool ParseNumber(const std::string& text, T& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

// Exit code 64 (EX_USAGE) on a bad command line.
std::optional<SwarmOptions> ParseArgs(int argc, char** argv, int& exit_code) {
  SwarmOptions o;
  exit_code = 64;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (arg == "--version" || arg == "-V") {
      std::cout << "halite-swarm " << halite::kVersion << "\n";
      exit_code = 0;
      return std::nullopt;
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      exit_code = 0;
      return std::nullopt;
    } else if (arg == "--forget-master-key") {
      o.forget_master_key = true;
    } else if (!value(v)) {
      std::cerr << "halite-swarm: " << arg << ": missing value or unknown option\n";
      return std::nullopt;
    } else if (arg == "--master") {
      o.master_ip = v;
    } else if (arg == "--port") {
      ok = ParseNumber(v, o.port) && o.port != 0;
    } else if (arg == "--pub-port") {
      ok = ParseNumber(v, o.pub_port);
    } else if (arg == "--count") {
      ok = ParseNumber(v, o.count) && o.count > 0;
    } else if (arg == "--prefix") {
      o.prefix = v;
    } else if (arg == "--start-index") {
      ok = ParseNumber(v, o.start_index) && o.start_index >= 0;
    } else if (arg == "--ramp") {
      ok = ParseNumber(v, o.ramp) && o.ramp >= 0;
    } else if (arg == "--keys-dir") {
      o.keys_dir = v;
    } else if (arg == "--keysize") {
      ok = ParseNumber(v, o.keysize) && o.keysize >= 1024 && o.keysize <= 16384;
    } else if (arg == "--grains" || arg == "--grains-cycle") {
      auto eq = v.find('=');
      ok = eq != std::string::npos && eq > 0;
      if (ok && arg == "--grains") {
        o.grains.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      } else if (ok) {
        std::vector<std::string> values;
        std::string rest = v.substr(eq + 1);
        for (std::size_t start = 0;;) {
          std::size_t comma = rest.find(',', start);
          values.push_back(rest.substr(start, comma - start));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
        o.grains_cycle.emplace_back(v.substr(0, eq), std::move(values));
      }
    } else if (arg == "--latency-ms") {
      ok = ParseNumber(v, o.latency_ms) && o.latency_ms >= 0;
    } else if (arg == "--protocol") {
      ok = ParseNumber(v, o.protocol) && (o.protocol == 2 || o.protocol == 3);
    } else if (arg == "--duration") {
      ok = ParseNumber(v, o.duration) && o.duration >= 0;
    } else if (arg == "--status-interval") {
      ok = ParseNumber(v, o.status_interval) && o.status_interval > 0;
    } else if (arg == "--loops") {
      ok = ParseNumber(v, o.loops) && o.loops > 0 && o.loops <= 64;
    } else if (arg == "--workers") {
      ok = ParseNumber(v, o.workers) && o.workers > 0;
    } else if (arg == "--exec-workers") {
      ok = ParseNumber(v, o.exec_workers) && o.exec_workers > 0;
    } else if (arg == "--io-threads") {
      ok = ParseNumber(v, o.io_threads) && o.io_threads > 0;
    } else if (arg == "--job-timeout") {
      ok = ParseNumber(v, o.job_timeout) && o.job_timeout >= 0;
    } else if (arg == "--acceptance-wait") {
      ok = ParseNumber(v, o.acceptance_wait) && o.acceptance_wait > 0;
    } else if (arg == "--auth-timeout") {
      ok = ParseNumber(v, o.auth_timeout) && o.auth_timeout > 0;
    } else if (arg == "--return-timeout") {
      ok = ParseNumber(v, o.return_timeout) && o.return_timeout > 0;
    } else if (arg == "--random-reauth-delay") {
      ok = ParseNumber(v, o.random_reauth_delay) && o.random_reauth_delay >= 0;
    } else if (arg == "--idle-close-ms") {
      ok = ParseNumber(v, o.idle_close_ms) && o.idle_close_ms >= -1;
    } else if (arg == "--log-level") {
      o.log_level = v;
    } else if (arg == "--log-file") {
      o.log_file = v;
    } else {
      std::cerr << "halite-swarm: unknown option " << arg << "\n";
      return std::nullopt;
    }
    if (!ok) {
      std::cerr << "halite-swarm: " << arg << ": invalid value '" << v << "'\n";
      return std::nullopt;
    }
  }
  if (o.master_ip.empty()) {
    std::cerr << "halite-swarm: --master is required\n";
    Usage();
    return std::nullopt;
  }
  return o;
}

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

std::string MinionId(const SwarmOptions& o, int index) {
  return o.prefix + std::to_string(o.start_index + index);
}

// Raises RLIMIT_NOFILE: to `want` when allowed (root may raise the hard limit), else to the
// hard limit. Returns the soft limit in force afterwards.
rlim_t RaiseFileLimit(rlim_t want) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < want) {
    rlimit raised{want, want};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return want;
  }
  rlim_t soft = limit.rlim_max == RLIM_INFINITY ? std::max(want, limit.rlim_cur) : limit.rlim_max;
  rlimit target{soft, limit.rlim_max};
  if (setrlimit(RLIMIT_NOFILE, &target) != 0) return limit.rlim_cur;
  return soft;
}

double RssMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  statm >> pages_total >> pages_rss;
  return static_cast<double>(pages_rss) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

struct Shard {
  explicit Shard(int index) : loop("swarm-" + std::to_string(index)) {}
  halite::transport::ZmqLoop loop;
  std::vector<std::shared_ptr<Minion>> minions;  // loop thread only
};

void PrintStatus(const MinionMetrics& m, int started, int count, double elapsed, FILE* out,
                 const char* label) {
  malloc_trim(0);  // give freed heap pages back so that rss shows what is live
  double rss = RssMiB();
  double heap = static_cast<double>(mallinfo2().uordblks) / 1048576.0;  // malloc'ed, in use
  std::fprintf(out,
               "%s[%7.1fs] started %d/%d | connected %" PRId64 " pending %" PRId64
               " rejected %" PRId64 " failed %" PRId64 " | sign-ins %" PRIu64 " reauths %" PRIu64
               " | publishes %" PRIu64 " jobs %" PRIu64 " returns %" PRIu64
               " | errors: auth %" PRIu64 " return %" PRIu64 " request %" PRIu64 " publish %" PRIu64
               " timeouts %" PRIu64 " | rss %.0f MiB (%.1f KiB/minion), heap in use %.0f MiB\n",
               label, elapsed, started, count, m.connected.load(), m.pending.load(),
               m.rejected.load(), m.failed.load(), m.auth_attempts.load(), m.reauths.load(),
               m.publishes.load(), m.jobs_seen.load(), m.returns_sent.load(), m.auth_errors.load(),
               m.return_errors.load(), m.request_errors.load(), m.publish_errors.load(),
               m.request_timeouts.load(), rss, started > 0 ? rss * 1024.0 / started : 0.0, heap);
  std::fflush(out);
}

// Makes the keys that are missing, in parallel on the pool. False when interrupted.
bool PrepareKeys(const SwarmOptions& o, halite::transport::WorkerPool& pool,
                 const sigset_t& signals) {
  std::vector<std::filesystem::path> missing;
  for (int i = 0; i < o.count; ++i) {
    std::filesystem::path dir = o.keys_dir / MinionId(o, i);
    if (o.forget_master_key) {
      std::error_code ec;
      std::filesystem::remove(dir / halite::minion::kMasterPubName, ec);
    }
    std::error_code ec;
    if (!std::filesystem::exists(dir / halite::minion::kMinionPemName, ec)) missing.push_back(dir);
  }
  if (missing.empty()) return true;
  std::printf("generating %zu keys (%d bits) in %s ...\n", missing.size(), o.keysize,
              o.keys_dir.c_str());
  std::fflush(stdout);
  std::atomic<std::size_t> done{0};
  std::atomic<std::size_t> failed{0};
  std::atomic<bool> cancel{false};
  for (const auto& dir : missing) {
    pool.Post([&, dir] {
      if (cancel) return;
      auto keys = halite::minion::LoadOrCreateKeys(dir, o.keysize);
      if (!keys.ok()) {
        spdlog::error("{}: {}", dir.string(), keys.error().ToString());
        ++failed;
      }
      ++done;
    });
  }
  auto last = Clock::now();
  while (done < missing.size()) {
    timespec wait{0, 200'000'000};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      cancel = true;
      pool.Shutdown();
      return false;
    }
    if (Clock::now() - last >= 2s) {
      std::printf("  keys: %zu/%zu\n", done.load(), missing.size());
      std::fflush(stdout);
      last = Clock::now();
    }
  }
  std::printf("keys ready (%zu failed)\n", failed.load());
  return true;
}

int Run(const SwarmOptions& o) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Per minion: a SUB and a request DEALER, each one fd for its mailbox and one for its TCP
  // connection, plus a short-lived sign-in socket.
  const rlim_t want = static_cast<rlim_t>(o.count) * 6 + 1024;
  const rlim_t nofile = RaiseFileLimit(want);
  int idle_close_ms = o.idle_close_ms;
  if (nofile < static_cast<rlim_t>(o.count) * 4 + 512) {
    if (idle_close_ms < 0) idle_close_ms = 2000;
    std::fprintf(stderr,
                 "warning: RLIMIT_NOFILE is %llu; %d minions need about %llu file descriptors. "
                 "Idle request sockets are closed after %d ms; raise the hard limit (LimitNOFILE, "
                 "ulimit -Hn) for steady numbers.\n",
                 static_cast<unsigned long long>(nofile), o.count,
                 static_cast<unsigned long long>(o.count) * 4 + 512, idle_close_ms);
  }
  if (idle_close_ms < 0) idle_close_ms = 0;

  zmq::context_t context(o.io_threads);
  context.set(zmq::ctxopt::max_sockets, o.count * 3 + 64);

  halite::transport::WorkerPool crypto("swarm-crypto", static_cast<std::size_t>(o.workers));
  if (!PrepareKeys(o, crypto, signals)) {
    std::printf("interrupted\n");
    return 130;
  }
  halite::transport::WorkerPool exec("swarm-exec", static_cast<std::size_t>(o.exec_workers));

  Value base = halite::minion::SystemGrains();
  for (const auto& [k, v] : o.grains) base.Set(k, v);
  MinionMetrics metrics;
  halite::minion::MinionEnv env;
  env.context = &context;
  env.crypto_pool = &crypto;
  env.exec_pool = &exec;
  env.functions =
      std::make_shared<const halite::minion::FunctionTable>(halite::minion::BuiltinFunctions());
  env.system_grains = std::make_shared<const Value>(std::move(base));
  env.metrics = &metrics;

  MinionOptions common;
  common.master_ip = o.master_ip;
  common.master_port = o.port;
  common.publish_port = o.pub_port;
  common.keysize = o.keysize;
  common.acceptance_wait_time = Ms(o.acceptance_wait);
  common.auth_timeout = Ms(o.auth_timeout);
  common.return_retry_timer = Ms(o.return_timeout);
  common.return_retry_timer_max = Ms(o.return_timeout * 2);
  common.request_protocol_version = o.protocol;
  common.function_latency = std::chrono::milliseconds(o.latency_ms);
  common.job_timeout = Ms(o.job_timeout);
  common.request_idle_close = std::chrono::milliseconds(idle_close_ms);
  common.random_reauth_delay = Ms(o.random_reauth_delay);

  std::vector<std::unique_ptr<Shard>> shards;
  for (int i = 0; i < o.loops; ++i) {
    shards.push_back(std::make_unique<Shard>(i));
    shards.back()->loop.Start();
  }
  std::atomic<int> create_errors{0};
  auto start_minion = [&](int index) {
    MinionOptions options = common;
    options.id = MinionId(o, index);
    options.pki_dir = o.keys_dir / options.id;
    options.cachedir = options.pki_dir;
    Value grains = Value::EmptyMap();
    for (const auto& [k, values] : o.grains_cycle) {
      grains.Set(k, values[static_cast<std::size_t>(index) % values.size()]);
    }
    options.grains = std::move(grains);
    Shard& shard = *shards[static_cast<std::size_t>(index % o.loops)];
    shard.loop.Post([&shard, &env, &create_errors, options = std::move(options)] {
      auto minion = Minion::Create(shard.loop, env, options);
      if (!minion.ok()) {
        if (create_errors++ == 0) spdlog::error("{}", minion.error().ToString());
        return;
      }
      (*minion)->Start();
      shard.minions.push_back(std::move(*minion));
    });
  };

  std::printf(
      "halite-swarm %s: %d minions (%s%d..%s%d) -> %s:%u, protocol v%d, %d loops, "
      "ramp %s/s, fd limit %llu\n",
      halite::kVersion, o.count, o.prefix.c_str(), o.start_index, o.prefix.c_str(),
      o.start_index + o.count - 1, o.master_ip.c_str(), o.port, o.protocol, o.loops,
      o.ramp > 0 ? std::to_string(static_cast<int>(o.ramp)).c_str() : "all",
      static_cast<unsigned long long>(nofile));
  std::fflush(stdout);

  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  int started = 0;
  auto next_status = t0 + Ms(o.status_interval);
  std::optional<double> all_connected_at;
  bool interrupted = false;
  for (;;) {
    double now_s = elapsed();
    int due = o.ramp > 0 ? std::min(o.count, static_cast<int>(now_s * o.ramp) + 1) : o.count;
    while (started < due) start_minion(started++);
    if (!all_connected_at && metrics.connected.load() >= o.count) {
      all_connected_at = now_s;
      std::printf("all %d minions signed in after %.1f s\n", o.count, now_s);
      std::fflush(stdout);
    }
    if (o.duration > 0 && now_s >= o.duration) break;
    if (Clock::now() >= next_status) {
      PrintStatus(metrics, started, o.count, now_s, stdout, "");
      next_status += Ms(o.status_interval);
    }
    timespec wait{0, (started < o.count ? 20 : 200) * 1'000'000L};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      interrupted = true;
      break;
    }
  }

  std::printf("%s; stopping\n", interrupted ? "signal received" : "duration reached");
  PrintStatus(metrics, started, o.count, elapsed(), stdout, "summary ");
  if (all_connected_at) {
    std::printf("summary: all %d signed in after %.1f s\n", o.count, *all_connected_at);
  } else {
    std::printf("summary: %" PRId64 " of %d signed in\n", metrics.connected.load(), o.count);
  }
  std::fflush(stdout);

  for (auto& shard : shards) {
    std::promise<void> done;
    shard->loop.Post([&] {
      for (auto& m : shard->minions) m->Stop();
      shard->minions.clear();
      done.set_value();
    });
    done.get_future().wait();
  }
  crypto.Shutdown();
  exec.Shutdown();
  for (auto& shard : shards) shard->loop.Stop();
  shards.clear();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  auto options = ParseArgs(argc, argv, exit_code);
  if (!options) return exit_code;
  if (auto st = halite::SetUpLogging({options->log_level, options->log_file, "halite-swarm"});
      !st.ok()) {
    std::cerr << "halite-swarm: " << st.error().message << "\n";
    return 64;
  }
  try {
    return Run(*options);
  } catch (const std::exception& e) {
    spdlog::critical("halite-swarm: {}", e.what());
    std::abort();
  }
}
