// The peer channel between three masters, as the master runs it (halite::cluster::PeerChannel
// with CURVE, acks and backlogs), over tcp loopback in one process:
//   halite_peer_bench SUBNET [--messages N] [--size BYTES] [--latency-messages M]
// SUBNET is "127.a.b." (the masters listen on .2, .3 and .4, port 4520). Two phases:
//   throughput: master 1 broadcasts N events as fast as Broadcast() takes them; the clock
//     stops when masters 2 and 3 both have all of them. Prints the events/s each peer
//     received ("events forwarded per second", the rate at which one master's event stream
//     reaches the others).
//   latency: M events, one every 1 ms (well under the throughput), each carrying its send
//     time; prints the median and 99th percentile of send -> handler on the other masters.
// Output lines are "<name> <value> <unit>" for bench/run.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "halite/cluster/curve_keys.h"
#include "halite/cluster/peer_channel.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using halite::cluster::PeerChannel;
using halite::cluster::PeerChannelOptions;
using halite::cluster::PeerMessage;

// What one master received: a count, and latencies while `timing` is on.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  long count = 0;
  bool timing = false;
  std::vector<double> latencies_us;
};

class Master {
 public:
  Master(PeerChannelOptions options) : loop_("bench-" + options.self_id) {
    channel_ = std::make_unique<PeerChannel>(context_, loop_, std::move(options));
    channel_->SetHandler([this](const std::string&, PeerMessage message) {
      const auto now = Clock::now().time_since_epoch();
      std::lock_guard lock(inbox_.mu);
      ++inbox_.count;
      if (inbox_.timing) {
        long long sent_ns = std::strtoll(message.payload.c_str(), nullptr, 10);
        const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
        inbox_.latencies_us.push_back(static_cast<double>(now_ns - sent_ns) / 1000.0);
      }
      inbox_.cv.notify_all();
    });
    loop_.Start();
  }
  ~Master() {
    channel_.reset();
    loop_.Stop();
  }
  PeerChannel& channel() { return *channel_; }
  Inbox& inbox() { return inbox_; }

 private:
  zmq::context_t context_;
  Inbox inbox_;
  halite::transport::ZmqLoop loop_;
  std::unique_ptr<PeerChannel> channel_;
};

bool WaitForCount(Inbox& inbox, long n, std::chrono::seconds timeout) {
  std::unique_lock lock(inbox.mu);
  return inbox.cv.wait_for(lock, timeout, [&] { return inbox.count >= n; });
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

int Run(const std::string& subnet, long messages, long size, long latency_messages) {
  char tmpl[] = "/tmp/halite-peer-bench.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path dir = tmpl;
  const std::vector<std::string> ids = {"m1", "m2", "m3"};
  auto endpoint = [&](std::size_t i) {
    return "tcp://" + subnet + std::to_string(2 + i) + ":4520";
  };
  std::vector<PeerChannelOptions> all;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto keys =
        halite::cluster::LoadOrCreateCurveKeys(dir / ("pki-" + ids[i]), dir / "shared", ids[i]);
    if (!keys.ok()) {
      std::fprintf(stderr, "keys: %s\n", keys.error().ToString().c_str());
      return 1;
    }
    PeerChannelOptions o;
    o.self_id = ids[i];
    o.bind_endpoint = endpoint(i);
    for (std::size_t j = 0; j < ids.size(); ++j) {
      if (j != i) o.peers.push_back({ids[j], endpoint(j)});
    }
    o.cluster_pki_dir = dir / "shared";
    o.keys = *keys;
    o.event_backlog_max = static_cast<std::size_t>(messages + latency_messages + 16);
    all.push_back(std::move(o));
  }
  int rc = 0;
  {
    std::vector<std::unique_ptr<Master>> masters;
    for (auto& o : all) masters.push_back(std::make_unique<Master>(std::move(o)));
    for (auto& m : masters) {
      halite::Status started = m->channel().Start();
      if (!started.ok()) {
        std::fprintf(stderr, "start: %s\n", started.error().ToString().c_str());
        return 1;
      }
    }
    // Every link up, and one message through each, before the clock starts.
    const auto deadline = Clock::now() + 30s;
    bool up = false;
    while (!up && Clock::now() < deadline) {
      up = true;
      for (auto& m : masters) {
        for (const auto& link : m->channel().Status()) up = up && link.connected;
      }
      if (!up) std::this_thread::sleep_for(10ms);
    }
    masters[0]->channel().Broadcast({"hello", "warm-up"});
    if (!up || !WaitForCount(masters[1]->inbox(), 1, 30s) ||
        !WaitForCount(masters[2]->inbox(), 1, 30s)) {
      std::fprintf(stderr, "peer links did not come up on %s2-4\n", subnet.c_str());
      return 1;
    }

    const std::string body(static_cast<std::size_t>(size), 'e');
    const auto t0 = Clock::now();
    for (long i = 0; i < messages; ++i) masters[0]->channel().Broadcast({"event", body});
    if (!WaitForCount(masters[1]->inbox(), 1 + messages, 120s) ||
        !WaitForCount(masters[2]->inbox(), 1 + messages, 120s)) {
      std::fprintf(stderr, "throughput phase timed out\n");
      rc = 1;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("peer_events %.0f events/s\n", static_cast<double>(messages) / seconds);

    for (std::size_t i = 1; i < masters.size(); ++i) {
      std::lock_guard lock(masters[i]->inbox().mu);
      masters[i]->inbox().timing = true;
    }
    for (long i = 0; i < latency_messages; ++i) {
      const auto now =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
              .count();
      std::string payload = std::to_string(now) + " " + body;
      masters[0]->channel().Broadcast({"event", std::move(payload)});
      std::this_thread::sleep_for(1ms);
    }
    std::vector<double> latencies;
    for (std::size_t i = 1; i < masters.size(); ++i) {
      if (!WaitForCount(masters[i]->inbox(), 1 + messages + latency_messages, 30s)) rc = 1;
      std::lock_guard lock(masters[i]->inbox().mu);
      latencies.insert(latencies.end(), masters[i]->inbox().latencies_us.begin(),
                       masters[i]->inbox().latencies_us.end());
    }
    std::printf("peer_latency_median %.0f us\n", Percentile(latencies, 0.5));
    std::printf("peer_latency_p99 %.0f us\n", Percentile(latencies, 0.99));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strncmp(argv[1], "127.", 4) != 0) {
    std::fprintf(stderr,
                 "usage: halite_peer_bench 127.a.b. [--messages N] [--size BYTES] "
                 "[--latency-messages M]\n");
    return 64;
  }
  long messages = 100000, size = 500, latency_messages = 1000;
  for (int i = 2; i + 1 < argc; i += 2) {
    long v = std::strtol(argv[i + 1], nullptr, 10);
    std::string flag = argv[i];
    if (v <= 0) return 64;
    if (flag == "--messages") {
      messages = v;
    } else if (flag == "--size") {
      size = v;
    } else if (flag == "--latency-messages") {
      latency_messages = v;
    } else {
      return 64;
    }
  }
  spdlog::set_level(spdlog::level::warn);  // link up/down lines would drown the figures
  return Run(argv[1], messages, size, latency_messages);
}
