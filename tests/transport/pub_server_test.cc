// PubServer over real sockets: libzmq SUB and XSUB peers (what minions are) and raw TCP.
#include "halite/transport/pub_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>

#include "loopback.h"
#include "monitored_socket.h"
#include "wait.h"

namespace halite::transport {
namespace {

using namespace std::chrono_literals;
using halite::testing::WaitUntil;

class PubServerTest : public ::testing::Test {
 protected:
  void Start(PubServerOptions options = {}) {
    options.endpoint = "tcp://" + halite::testing::UniqueLoopbackIp() + ":*";
    options.on_subscriber = [this] { arrivals_++; };
    loop_.Start();
    std::promise<Status> started;
    loop_.Post([&] {
      server_ = std::make_unique<PubServer>(ctx_, loop_, std::move(options));
      Status st = server_->Start();
      endpoint_ = std::string(server_->last_endpoint());
      started.set_value(std::move(st));
    });
    auto st = started.get_future().get();
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  void TearDown() override {
    if (server_) {
      loop_.Post([this] { server_->Stop(); });
    }
    loop_.Stop();
    server_.reset();
  }
  std::size_t Send(const std::string& message) {
    std::promise<std::size_t> reached;
    loop_.Post([&] { reached.set_value(server_->Send(message)); });
    return reached.get_future().get();
  }
  // A peer connected to the server, whose handshake and disconnection can be awaited.
  std::unique_ptr<halite::testing::MonitoredSocket> Peer(zmq::socket_type type, int rcvhwm = 1000) {
    auto peer = std::make_unique<halite::testing::MonitoredSocket>(ctx_, type);
    peer->socket.set(zmq::sockopt::rcvhwm, rcvhwm);
    peer->socket.connect(endpoint_);
    return peer;
  }

  zmq::context_t ctx_;
  ZmqLoop loop_{"t-pub"};
  std::unique_ptr<PubServer> server_;
  std::string endpoint_;
  std::atomic<int> arrivals_{0};
};

// What every minion does: SUB, subscribe to "", receive each publish whole.
TEST_F(PubServerTest, ASubscriberOfEverythingGetsEachMessage) {
  Start();
  auto sub = Peer(zmq::socket_type::sub);
  sub->socket.set(zmq::sockopt::subscribe, "");
  sub->socket.set(zmq::sockopt::rcvtimeo, 10000);
  ASSERT_EQ(sub->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  ASSERT_TRUE(WaitUntil([&] { return server_->subscribers() == 1; }));
  EXPECT_EQ(arrivals_.load(), 1);
  EXPECT_EQ(server_->subscriptions(), 1u);
  for (std::size_t size : {0u, 1u, 255u, 256u, 100000u}) {
    const std::string message(size, static_cast<char>('a' + size % 26));
    ASSERT_EQ(Send(message), 1u);
    zmq::message_t got;
    ASSERT_TRUE(sub->socket.recv(got).has_value()) << size;
    EXPECT_EQ(got.to_string(), message);
    EXPECT_FALSE(got.more());
  }
  sub->Unmonitor();
  sub->socket.close();
  ASSERT_TRUE(WaitUntil([&] { return server_->connections() == 0; }));
  EXPECT_EQ(server_->subscribers(), 0);
  EXPECT_EQ(server_->refused(), 0u);
}

// A topic other than "" (a zmq_filtering minion) is not stored and gets nothing; the
// connection stays.
TEST_F(PubServerTest, ATopicSubscriberGetsNothingAndIsKept) {
  Start();
  auto topic = Peer(zmq::socket_type::sub);
  topic->socket.set(zmq::sockopt::subscribe, "broadcast");
  topic->socket.set(zmq::sockopt::rcvtimeo, 10000);
  auto all = Peer(zmq::socket_type::sub);
  all->socket.set(zmq::sockopt::subscribe, "");
  all->socket.set(zmq::sockopt::rcvtimeo, 10000);
  ASSERT_EQ(topic->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  ASSERT_EQ(all->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  ASSERT_TRUE(WaitUntil([&] { return server_->subscribers() == 1; }));
  ASSERT_TRUE(WaitUntil([&] { return server_->connections() == 2; }));
  EXPECT_EQ(Send("broadcast and more"), 1u);
  zmq::message_t got;
  ASSERT_TRUE(all->socket.recv(got).has_value());
  EXPECT_FALSE(topic->socket.recv(got, zmq::recv_flags::dontwait).has_value());
  EXPECT_EQ(server_->refused(), 0u);
}

// Finding 21: a stranger's distinct subscriptions. libzmq's PUB kept every one; here the
// connection is closed once it sends more than a subscriber does.
TEST_F(PubServerTest, ManyDistinctSubscriptionsCloseTheConnection) {
  Start();
  auto stranger = Peer(zmq::socket_type::xsub);
  ASSERT_EQ(stranger->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  for (int i = 0; i < 1000; ++i) {
    std::string frame = "\x01topic-" + std::to_string(i);
    if (!stranger->socket.send(zmq::buffer(frame), zmq::send_flags::dontwait)) break;
  }
  EXPECT_EQ(stranger->NextEvent(), ZMQ_EVENT_DISCONNECTED);
  ASSERT_TRUE(WaitUntil([&] { return server_->refused() >= 1; }));
}

TEST_F(PubServerTest, AnOversizedFrameClosesTheConnection) {
  Start();
  auto stranger = Peer(zmq::socket_type::xsub);
  ASSERT_EQ(stranger->NextEvent(), ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  std::string frame(1025, 'x');
  frame[0] = 1;
  ASSERT_TRUE(stranger->socket.send(zmq::buffer(frame), zmq::send_flags::none).has_value());
  EXPECT_EQ(stranger->NextEvent(), ZMQ_EVENT_DISCONNECTED);
  EXPECT_EQ(server_->subscribers(), 0);
}

// Raw TCP: a connection that never speaks, and one that speaks something else, are closed.
TEST_F(PubServerTest, SilentAndNonZmtpConnectionsAreClosed) {
  PubServerOptions options;
  options.handshake_timeout = 300ms;
  Start(options);
  const auto colon = endpoint_.rfind(':');
  const std::string ip = endpoint_.substr(6, colon - 6);
  const int port = std::stoi(endpoint_.substr(colon + 1));
  auto connect = [&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  };
  // Reads until the server closes (0) or the timeout (-1); returns what it read.
  auto drain = [](int fd, ssize_t* last) {
    std::string got;
    char buf[4096];
    while ((*last = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, *last);
    return got;
  };
  const int silent = connect();
  const int http = connect();
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, ' ');
  ASSERT_EQ(::send(http, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  ssize_t last = 0;
  const std::string to_http = drain(http, &last);
  EXPECT_EQ(last, 0) << "the server kept a connection that sent HTTP";
  EXPECT_EQ(to_http.substr(0, 64), zmtp::PubGreeting());
  const std::string to_silent = drain(silent, &last);
  EXPECT_EQ(last, 0) << "the server kept a silent connection past the handshake timeout";
  ::close(silent);
  ::close(http);
  EXPECT_EQ(server_->refused(), 2u);
  ASSERT_TRUE(WaitUntil([&] { return server_->connections() == 0; }));
}

// A subscriber that does not read: its queue fills, and publishes to it are dropped and
// counted instead of held without bound; the other subscriber gets every one.
TEST_F(PubServerTest, ASubscriberThatDoesNotReadMissesPublishesOthersGetThem) {
  PubServerOptions options;
  options.sndhwm = 4;
  Start(options);
  auto stalled = Peer(zmq::socket_type::sub, 1);  // libzmq itself holds one message
  stalled->socket.set(zmq::sockopt::subscribe, "");
  auto reader = Peer(zmq::socket_type::sub);
  reader->socket.set(zmq::sockopt::subscribe, "");
  reader->socket.set(zmq::sockopt::rcvtimeo, 10000);
  ASSERT_TRUE(WaitUntil([&] { return server_->subscribers() == 2; }));
  const std::string big(1 << 20, 'z');
  int sent = 0;
  while (server_->dropped() == 0 && sent < 200) {
    Send(big);
    ++sent;
    zmq::message_t got;
    ASSERT_TRUE(reader->socket.recv(got).has_value()) << sent;
    ASSERT_EQ(got.size(), big.size());
  }
  EXPECT_GT(server_->dropped(), 0u) << sent << " MiB queued for a subscriber that reads nothing";
}

}  // namespace
}  // namespace halite::transport
