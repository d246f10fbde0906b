// Hostile input on the publish port, 4505 (issue 12, findings 20 and 21): what a stranger's
// subscriptions can make the master do or keep. The port is halite's own (transport::PubServer).
#include <gtest/gtest.h>

#include <zmq.hpp>

#include "halite/master/publisher.h"
#include "hostile.h"
#include "monitored_socket.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

// Finding 20: anyone can subscribe on 4505, and a subscription starts a replay round, which
// sends every live job to every minion. A stranger sending one 1-byte frame after each round
// made a round every 200 ms for as long as a job was live (35 s by default): with 5 minions
// connected, 20 frames over 6 s re-sent one job 100 times. Rounds now back off to one per
// publish_replay's max_interval (5 s): 200, 400, 800, 1,600 ms... so at most 4 in 4 s. (A
// connection's repeated "" subscription counts once since the publish port is halite's own, so
// the stranger reconnects for each, as a fleet coming back does.)
TEST_F(HostileTest, AStrangersSubscriptionFramesOn4505CannotMakeEveryJobBeResentWithoutEnd) {
  MasterUnderTest master(tmp_.path(), Spec());
  master.Start();
  auto web = SignIn(ctx_, master, "web1");
  const std::string jid = PublishJob(master, "*");  // live for timeout (5 s) + grace (30 s)
  ASSERT_FALSE(jid.empty());
  const std::string name = Labels("halite_publish_replays_total");
  // A subscription on a new connection; then the next as soon as the round it caused is
  // done, or after 100 ms.
  const auto start = std::chrono::steady_clock::now();
  int frames = 0;
  while (std::chrono::steady_clock::now() - start < 4s) {
    const double rounds = MetricOr0(master, name);
    zmq::socket_t stranger(ctx_, zmq::socket_type::xsub);
    stranger.set(zmq::sockopt::linger, 0);
    stranger.connect("tcp://" + master.ip() + ":4505");
    ASSERT_TRUE(stranger.send(zmq::str_buffer("\x01"), zmq::send_flags::none).has_value());
    ++frames;
    (void)WaitUntil([&] { return MetricOr0(master, name) > rounds; }, 100ms, 5ms);
  }
  const double rounds = MetricOr0(master, name);
  EXPECT_GE(rounds, 1) << "a subscriber must still get the live jobs";
  // Without the backoff: a round per 200-300 ms here (14 to 20 in 4 s).
  EXPECT_LE(rounds, 5) << frames << " frames made " << rounds << " rounds";
}

namespace {

// A stranger's XSUB connected to 4505, whose handshake and disconnection can be awaited.
std::unique_ptr<MonitoredSocket> PublishPortStranger(zmq::context_t& ctx,
                                                     const std::string& endpoint) {
  auto stranger = std::make_unique<MonitoredSocket>(ctx, zmq::socket_type::xsub);
  stranger->socket.connect(endpoint);
  return stranger;
}

}  // namespace

// Finding 21: libzmq's PUB kept every subscription a connection sent on 4505 while it lived,
// and took frames of any size (one of 100 MB: +252 MiB of master RSS). The publish port is now
// halite's own (transport::PubServer): a frame over kMaxSubscriptionBytes drops the connection.
TEST_F(HostileTest, AnOversizedSubscriptionFrameOn4505DropsItsConnection) {
  MasterUnderTest master(tmp_.path(), Spec());
  master.Start();
  auto stranger = PublishPortStranger(ctx_, "tcp://" + master.ip() + ":4505");
  ASSERT_EQ(stranger->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  // A subscription of the largest size taken keeps the connection; one byte more drops it.
  std::string frame(master::kMaxSubscriptionBytes, 'x');
  frame[0] = 1;
  ASSERT_TRUE(stranger->socket.send(zmq::buffer(frame), zmq::send_flags::none).has_value());
  // (Not a subscription on this side: the stranger's own XSUB would store it in a trie that
  // recurses once per byte.)
  std::string big(10u << 20, 'y');
  big[0] = 2;
  ASSERT_TRUE(stranger->socket.send(zmq::buffer(big), zmq::send_flags::none).has_value());
  EXPECT_EQ(stranger->NextEvent(), ZMQ_EVENT_DISCONNECTED)
      << "the master kept the connection that sent a 10 MiB frame";
  EXPECT_EQ(MetricOr0(master, Labels("halite_publish_port_closed_total")), 1);
}

// Finding 21: many small distinct subscriptions. With libzmq's PUB, 20,000 of 1 KiB each grew
// the master from 326 to 1,456 MiB (ASan build). Now none is kept: 300 connections of 64
// distinct 1 KiB subscriptions each (19 MiB) stay, cost only their connections, and a 65th
// subscription closes its connection; the minion keeps getting its jobs.
TEST_F(HostileTest, ManyDistinctSubscriptionsOn4505AreNotKept) {
  MasterSpec spec = Spec();
  // ASan holds freed memory back (256 MiB by default), which would count as kept here.
  const char* asan = std::getenv("ASAN_OPTIONS");
  spec.env.push_back("ASAN_OPTIONS=" + std::string(asan != nullptr ? asan : "") +
                     ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64");
  MasterUnderTest master(tmp_.path(), spec);
  master.Start();
  std::vector<std::unique_ptr<MinionUnderTest>> minions;
  StartMinion(tmp_.path(), "real1", master.ip(), minions);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last;
  const std::string endpoint = "tcp://" + master.ip() + ":4505";
  const long rss_before = StatusKib(master.pid(), "VmRSS");
  constexpr int kConnections = 300;
  constexpr int kPerConnection = 64;
  std::vector<std::unique_ptr<MonitoredSocket>> strangers;
  std::string frame(master::kMaxSubscriptionBytes, 'x');
  frame[0] = 1;
  for (int c = 0; c < kConnections; ++c) {
    strangers.push_back(PublishPortStranger(ctx_, endpoint));
    ASSERT_EQ(strangers.back()->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED) << c;
    for (int i = 0; i < kPerConnection; ++i) {
      const std::string n = std::to_string(c * kPerConnection + i);
      frame.replace(1, n.size(), n);  // distinct: libzmq's trie kept a node per byte
      ASSERT_TRUE(strangers.back()->socket.send(zmq::buffer(frame), zmq::send_flags::none));
    }
  }
  const std::string topics = Labels("halite_publish_topic_subscriptions_total");
  ASSERT_TRUE(
      WaitUntil([&] { return MetricOr0(master, topics) >= kConnections * kPerConnection; }, 60s))
      << MetricOr0(master, topics);
  const long rss_after = StatusKib(master.pid(), "VmRSS");
  EXPECT_EQ(MetricOr0(master, Labels("halite_publish_port_closed_total")), 0);
  EXPECT_EQ(MetricOr0(master, Labels("halite_publish_port_connections")), kConnections + 1);
  EXPECT_EQ(MetricOr0(master, Labels("halite_connected_minions")), 1);
  // 19 MiB of distinct subscriptions; libzmq kept ~55 bytes of trie per byte of them.
  EXPECT_LT(rss_after - rss_before, 64 * 1024) << rss_before << " -> " << rss_after << " KiB";
  // One more subscription closes that connection.
  ASSERT_TRUE(strangers.front()->socket.send(zmq::buffer(frame), zmq::send_flags::none));
  EXPECT_EQ(strangers.front()->NextEvent(), ZMQ_EVENT_DISCONNECTED);
  EXPECT_EQ(MetricOr0(master, Labels("halite_publish_port_closed_total")), 1);
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last;
}

}  // namespace
}  // namespace halite::testing
