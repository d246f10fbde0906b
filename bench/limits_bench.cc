// The physical limits halite's figures are compared against, measured on this machine in the
// same run as the figures (bench/run). Plain libzmq/cppzmq and POSIX, nothing of halite's:
//   halite_limits_bench pushpull IP [--messages N] [--size BYTES]
//       one PUSH -> one PULL over tcp loopback: messages/s (the ceiling of one request or
//       peer stream through libzmq on this machine)
//   halite_limits_bench fanout IP [--subscribers K] [--messages N] [--size BYTES]
//       one PUB -> K SUB over tcp loopback: deliveries/s (the ceiling of a job publish)
//   halite_limits_bench conns IP [--connections N]
//       one ROUTER and one PUB, each with N peers over tcp loopback (a child process holds
//       the peers): the server's RSS growth per peer pair (what libzmq alone costs per
//       connected minion)
//   halite_limits_bench fsync DIR [--seconds S] [--size BYTES]
//       write + fdatasync of one file in DIR, in a loop: flushes/s (the ceiling of durable
//       writes that each wait for their own flush)
// Each prints one line "<name> <value> <unit>" on stdout for bench/run to parse. IP is an IPv4
// literal on loopback (the ports are chosen by the kernel); nothing is resolved.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "fanout.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode;
  std::string target;  // IP or DIR
  long messages = 200000;
  long size = 300;  // a small encrypted return is a few hundred bytes
  long subscribers = 100;
  long connections = 1000;
  double seconds = 2;
};

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: halite_limits_bench pushpull IP [--messages N] [--size BYTES]\n"
               "       halite_limits_bench fanout IP [--subscribers K] [--messages N] "
               "[--size BYTES]\n"
               "       halite_limits_bench conns IP [--connections N]\n"
               "       halite_limits_bench fsync DIR [--seconds S] [--size BYTES]\n");
  std::exit(64);
}

Args Parse(int argc, char** argv) {
  if (argc < 3) Usage();
  Args a;
  a.mode = argv[1];
  a.target = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    char* end = nullptr;
    double v = std::strtod(argv[i + 1], &end);
    if (*end != '\0' || v <= 0) Usage();
    if (flag == "--messages") {
      a.messages = static_cast<long>(v);
    } else if (flag == "--size") {
      a.size = static_cast<long>(v);
    } else if (flag == "--subscribers") {
      a.subscribers = static_cast<long>(v);
    } else if (flag == "--connections") {
      a.connections = static_cast<long>(v);
    } else if (flag == "--seconds") {
      a.seconds = v;
    } else {
      Usage();
    }
  }
  if ((argc - 3) % 2 != 0) Usage();
  return a;
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string BindAnyPort(zmq::socket_t& socket, const std::string& ip) {
  socket.bind("tcp://" + ip + ":*");
  return socket.get(zmq::sockopt::last_endpoint);
}

// One PUSH on a thread of its own, one PULL here; the clock runs from the first message
// received to the last, so connection set-up is not counted.
int PushPull(const Args& a) {
  zmq::context_t context(1);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  const std::string endpoint = BindAnyPort(pull, a.target);
  std::thread sender([&] {
    zmq::socket_t push(context, zmq::socket_type::push);
    push.connect(endpoint);
    std::string body(static_cast<std::size_t>(a.size), 'x');
    for (long i = 0; i < a.messages + 1; ++i) push.send(zmq::buffer(body));
    push.close();
  });
  zmq::message_t message;
  (void)pull.recv(message);  // the first message starts the clock
  const auto t0 = Clock::now();
  for (long i = 0; i < a.messages; ++i) (void)pull.recv(message);
  const double seconds = Since(t0);
  sender.join();
  std::printf("zmq_pushpull %.0f msg/s\n", static_cast<double>(a.messages) / seconds);
  return 0;
}

// One XPUB, K SUBs read by one thread with zmq_poll. The publisher waits for every
// subscription before it starts, then sends N messages; the clock stops when every
// subscriber has every message. High-water marks are off so that nothing is dropped.
int Fanout(const Args& a) {
  zmq::context_t context(1);
  zmq::socket_t pub(context, zmq::socket_type::xpub);
  pub.set(zmq::sockopt::sndhwm, 0);
  pub.set(zmq::sockopt::xpub_verbose, 1);  // every subscription, not just the first per topic
  const std::string endpoint = BindAnyPort(pub, a.target);
  auto subs = halite::bench::FanoutSubscribers(context, a.subscribers, endpoint);
  for (long i = 0; i < a.subscribers; ++i) {
    zmq::message_t subscription;
    (void)pub.recv(subscription);
  }
  std::thread sender([&] {
    std::string body(static_cast<std::size_t>(a.size), 'x');
    for (long i = 0; i < a.messages; ++i) pub.send(zmq::buffer(body));
  });
  const auto t0 = Clock::now();
  const double seconds = halite::bench::DrainFanout(subs, a.messages, t0);
  sender.join();
  std::printf("zmq_fanout %.0f deliveries/s\n",
              static_cast<double>(a.subscribers * a.messages) / seconds);
  return 0;
}

long RssKib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long pages_total = 0, pages_rss = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = 0;
    std::fclose(f);
  }
  return pages_rss * (::sysconf(_SC_PAGESIZE) / 1024);
}

// A minion holds two connections to its master: a request DEALER to the ROUTER and a SUB
// to the PUB. The child connects N of each, sends one message per DEALER and subscribes
// per SUB; the server counts both, sends one publish and reads its RSS with every peer
// connected and active.
int Conns(const Args& a) {
  zmq::context_t context(1);
  context.set(zmq::ctxopt::max_sockets, static_cast<int>(2 * a.connections + 64));
  zmq::socket_t router(context, zmq::socket_type::router);
  zmq::socket_t pub(context, zmq::socket_type::xpub);
  pub.set(zmq::sockopt::xpub_verbose, 1);
  const std::string router_endpoint = BindAnyPort(router, a.target);
  const std::string pub_endpoint = BindAnyPort(pub, a.target);
  malloc_trim(0);
  const long before = RssKib();
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    zmq::context_t peers(1);
    peers.set(zmq::ctxopt::max_sockets, static_cast<int>(2 * a.connections + 64));
    std::vector<zmq::socket_t> sockets;
    for (long i = 0; i < a.connections; ++i) {
      sockets.emplace_back(peers, zmq::socket_type::dealer);
      sockets.back().connect(router_endpoint);
      sockets.back().send(zmq::str_buffer("hello"));
      sockets.emplace_back(peers, zmq::socket_type::sub);
      sockets.back().set(zmq::sockopt::subscribe, "");
      sockets.back().connect(pub_endpoint);
    }
    ::pause();  // until the parent kills us
    std::_Exit(0);
  }
  long hellos = 0, subscriptions = 0;
  zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}, {pub.handle(), 0, ZMQ_POLLIN, 0}};
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while ((hellos < a.connections || subscriptions < a.connections) && Clock::now() < deadline) {
    zmq::poll(items, 2, std::chrono::milliseconds(100));
    std::vector<zmq::message_t> parts;
    while (zmq::recv_multipart(router, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
      ++hellos;
      parts.clear();
    }
    zmq::message_t subscription;
    while (pub.recv(subscription, zmq::recv_flags::dontwait)) ++subscriptions;
  }
  pub.send(zmq::str_buffer("publish"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  malloc_trim(0);
  const long after = RssKib();
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  if (hellos < a.connections || subscriptions < a.connections) {
    std::fprintf(stderr, "only %ld/%ld connections came up\n", std::min(hellos, subscriptions),
                 a.connections);
    return 1;
  }
  std::printf("zmq_rss_per_peer %.1f KiB\n",
              static_cast<double>(after - before) / static_cast<double>(a.connections));
  return 0;
}

// write + fdatasync of the same block, as a log append that waits for its flush would.
int Fsync(const Args& a) {
  const std::filesystem::path path =
      std::filesystem::path(a.target) / ("fsync-probe." + std::to_string(::getpid()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  std::string block(static_cast<std::size_t>(a.size), 'x');
  long flushes = 0;
  const auto t0 = Clock::now();
  while (Since(t0) < a.seconds) {
    if (::pwrite(fd, block.data(), block.size(), 0) != static_cast<ssize_t>(block.size()) ||
        ::fdatasync(fd) != 0) {
      std::perror(path.c_str());
      ::close(fd);
      ::unlink(path.c_str());
      return 1;
    }
    ++flushes;
  }
  const double seconds = Since(t0);
  ::close(fd);
  ::unlink(path.c_str());
  std::printf("fdatasync %.0f flush/s\n", static_cast<double>(flushes) / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  if (a.mode == "pushpull") return PushPull(a);
  if (a.mode == "fanout") return Fanout(a);
  if (a.mode == "fsync") return Fsync(a);
  if (a.mode == "conns") return Conns(a);
  Usage();
}
