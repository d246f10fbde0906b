#include "halite/swarm/swarm.h"

#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "halite/common/process_memory.h"
#include "halite/minion/grains.h"
#include "halite/minion/keys.h"
#include "halite/minion/minion.h"
#include "halite/swarm/ledger.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/version.h"

namespace halite::swarm {

namespace {

using namespace std::chrono_literals;
using halite::minion::Minion;
using halite::minion::MinionMetrics;
using halite::minion::MinionOptions;
using halite::wire::Value;
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
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

struct Shard {
  explicit Shard(int index) : loop("swarm-" + std::to_string(index)) {}
  halite::transport::ZmqLoop loop;
  std::vector<std::shared_ptr<Minion>> minions;  // loop thread only
};

void PrintStatus(const MinionMetrics& m, int started, int count, double elapsed, FILE* out,
                 const char* label) {
  // Freed heap pages given back first, so that rss shows what is live.
  double rss = static_cast<double>(TrimHeap().resident_after) / 1048576.0;
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

}  // namespace

int RunSwarm(const SwarmOptions& o) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Per minion: a SUB and a request DEALER, each one fd for its mailbox and one for its TCP
  // connection, plus a short-lived sign-in socket.
  // With a ledger each minion also has a monitor on its SUB: two more inproc sockets (each
  // one mailbox fd), libzmq's end and ours.
  const int ledger_sockets = o.ledger.empty() ? 0 : 2;
  const rlim_t nofile =
      RaiseFileLimit(WantedFileLimit(o.count) + static_cast<rlim_t>(o.count) * ledger_sockets);
  const int idle_close_ms = EffectiveIdleCloseMs(o, nofile);
  if (nofile < MinimumFileLimit(o.count)) {
    std::fprintf(stderr,
                 "warning: RLIMIT_NOFILE is %llu; %d minions need about %llu file descriptors. "
                 "Idle request sockets are closed after %d ms; raise the hard limit (LimitNOFILE, "
                 "ulimit -Hn) for steady numbers.\n",
                 static_cast<unsigned long long>(nofile), o.count,
                 static_cast<unsigned long long>(MinimumFileLimit(o.count)), idle_close_ms);
  }

  std::unique_ptr<Ledger> ledger;
  if (!o.ledger.empty()) {
    auto opened = Ledger::Open(o.ledger);
    if (!opened.ok()) {
      std::fprintf(stderr, "halite-swarm: %s\n", opened.error().message.c_str());
      return 73;  // EX_CANTCREAT
    }
    ledger = std::move(*opened);
  }

  zmq::context_t context(o.io_threads);
  context.set(zmq::ctxopt::max_sockets, o.count * (3 + ledger_sockets) + 64);

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
  env.journal = ledger.get();

  const MinionOptions common = CommonMinionOptions(o, idle_close_ms);

  std::vector<std::unique_ptr<Shard>> shards;
  for (int i = 0; i < o.loops; ++i) {
    shards.push_back(std::make_unique<Shard>(i));
    shards.back()->loop.Start();
  }
  std::atomic<int> create_errors{0};
  auto start_minion = [&](int index) {
    MinionOptions options = MinionOptionsFor(o, common, index);
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
  if (ledger) {
    ledger->Close();
    LedgerStats ls = ledger->Stats();
    std::printf("summary: ledger %s: %" PRIu64 " records (%" PRIu64 " lost), %" PRIu64
                " batches, %.1f ms writing and syncing (mean %.2f ms, max %.2f ms per batch)%s\n",
                o.ledger.c_str(), ls.records, ls.lost, ls.batches, ls.sync_time.count() / 1000.0,
                ls.batches ? ls.sync_time.count() / 1000.0 / static_cast<double>(ls.batches) : 0.0,
                ls.max_sync.count() / 1000.0, ls.write_errors ? ", WRITE ERRORS" : "");
    std::fflush(stdout);
    if (ls.write_errors > 0 || ls.lost > 0) return 74;  // EX_IOERR: the ledger is incomplete
  }
  return 0;
}

}  // namespace halite::swarm
