// The publish port's fan-out: halite's transport::PubServer (ZMTP spoken by halite on a
// ZMQ_STREAM socket) against libzmq's XPUB, which it replaced (docs/security.md, finding 21),
// in the same run, with the same K libzmq SUB peers over tcp loopback.
//   halite_publish_bench IP [--subscribers K] [--messages N] [--size BYTES]
// Prints "xpub <deliveries/s>" and "pubserver <deliveries/s> <publishing-thread CPU s>" lines,
// and the XPUB's CPU the same way. IP is an IPv4 literal on loopback; nothing is resolved.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "fanout.h"
#include "halite/common/cpu_budget.h"
#include "halite/transport/pub_server.h"
#include "halite/transport/zmq_loop.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }

struct Args {
  std::string ip;
  long subscribers = 1000;
  long messages = 200;
  long size = 2000;  // a small job publish, encrypted and signed
};

void Xpub(const Args& a) {
  zmq::context_t context(1);
  context.set(zmq::ctxopt::max_sockets, 4 * static_cast<int>(a.subscribers) + 64);
  zmq::socket_t pub(context, zmq::socket_type::xpub);
  pub.set(zmq::sockopt::sndhwm, 0);
  pub.set(zmq::sockopt::linger, 0);
  pub.set(zmq::sockopt::xpub_verbose, 1);
  pub.bind("tcp://" + a.ip + ":*");
  auto subs = halite::bench::FanoutSubscribers(context, a.subscribers,
                                               pub.get(zmq::sockopt::last_endpoint));
  for (long i = 0; i < a.subscribers; ++i) {
    zmq::message_t subscription;
    (void)pub.recv(subscription);
  }
  double cpu = 0;
  const auto t0 = Clock::now();
  std::thread sender([&] {
    const double c0 = Seconds(halite::ThreadCpuTime());
    std::string body(static_cast<std::size_t>(a.size), 'x');
    for (long i = 0; i < a.messages; ++i) pub.send(zmq::buffer(body));
    cpu = Seconds(halite::ThreadCpuTime()) - c0;
  });
  const double seconds = halite::bench::DrainFanout(subs, a.messages, t0);
  sender.join();
  std::printf("xpub %.0f deliveries/s, %.3f s sender CPU\n",
              static_cast<double>(a.subscribers * a.messages) / seconds, cpu);
}

void Server(const Args& a) {
  zmq::context_t context(1);
  context.set(zmq::ctxopt::max_sockets, 4 * static_cast<int>(a.subscribers) + 64);
  halite::transport::ZmqLoop loop("bench-pub");
  loop.Start();
  std::unique_ptr<halite::transport::PubServer> server;
  std::promise<std::string> bound;
  loop.Post([&] {
    halite::transport::PubServerOptions options;
    options.endpoint = "tcp://" + a.ip + ":*";
    options.sndhwm = 0;
    server = std::make_unique<halite::transport::PubServer>(context, loop, options);
    if (!server->Start().ok()) std::abort();
    bound.set_value(std::string(server->last_endpoint()));
  });
  auto subs = halite::bench::FanoutSubscribers(context, a.subscribers, bound.get_future().get());
  while (server->subscribers() < a.subscribers) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::promise<double> cpu;
  const auto t0 = Clock::now();
  loop.Post([&] {
    const double c0 = Seconds(halite::ThreadCpuTime());
    std::string body(static_cast<std::size_t>(a.size), 'x');
    for (long i = 0; i < a.messages; ++i) server->Send(body);
    cpu.set_value(Seconds(halite::ThreadCpuTime()) - c0);
  });
  const double seconds = halite::bench::DrainFanout(subs, a.messages, t0);
  std::printf("pubserver %.0f deliveries/s, %.3f s sender CPU\n",
              static_cast<double>(a.subscribers * a.messages) / seconds, cpu.get_future().get());
  loop.Post([&] { server->Stop(); });
  loop.Stop();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc - 2) % 2 != 0) {
    std::fprintf(stderr,
                 "usage: halite_publish_bench IP [--subscribers K] [--messages N] "
                 "[--size BYTES]\n");
    return 64;
  }
  Args a;
  a.ip = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (v <= 0) return 64;
    if (flag == "--subscribers") {
      a.subscribers = v;
    } else if (flag == "--messages") {
      a.messages = v;
    } else if (flag == "--size") {
      a.size = v;
    } else {
      return 64;
    }
  }
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);
  Xpub(a);
  Server(a);
  return 0;
}
