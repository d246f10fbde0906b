#include "halite/minion/request_channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>

#include "test_util.h"

namespace halite::minion {
namespace {

using namespace std::chrono_literals;

// A ROUTER on its own thread that ignores the first `drop` requests and echoes the rest.
class EchoRouter {
 public:
  EchoRouter(zmq::context_t& ctx, int drop) : socket_(ctx, zmq::socket_type::router), drop_(drop) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Run(); });
  }
  ~EchoRouter() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  int received() const { return received_; }
  std::set<std::string> peers() const {
    std::lock_guard lock(mu_);
    return peers_;
  }

 private:
  void Run() {
    while (!stop_) {
      zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 1, 10ms);
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      for (;;) {
        zmq::message_t m;
        if (!socket_.recv(m, zmq::recv_flags::dontwait)) break;
        bool more = m.more();
        frames.push_back(std::move(m));
        if (!more) break;
      }
      ++received_;
      {
        std::lock_guard lock(mu_);
        peers_.insert(frames.front().to_string());
      }
      if (drop_-- > 0) continue;
      EXPECT_EQ(frames.size(), 3u);  // [routing id, "", body]: what a REQ sends
      EXPECT_EQ(frames[1].size(), 0u);
      socket_.send(frames[0], zmq::send_flags::sndmore);
      socket_.send(zmq::message_t(), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer("echo:" + frames[2].to_string()));
    }
  }
  zmq::socket_t socket_;
  std::string endpoint_;
  int drop_;
  std::atomic<int> received_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::set<std::string> peers_;
  std::thread thread_;
};

class RequestChannelTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_.Start(); }
  void TearDown() override {
    testing::OnLoop(loop_, [&] { channel_.reset(); });
    loop_.Stop();
  }
  void Make(const std::string& endpoint) {
    testing::OnLoop(loop_, [&] {
      channel_ = std::make_unique<RequestChannel>(loop_, context_,
                                                  RequestChannel::Options{endpoint, false, 0ms});
    });
  }
  std::future<Result<std::string>> Send(std::string body, std::chrono::milliseconds timeout,
                                        int tries) {
    auto promise = std::make_shared<std::promise<Result<std::string>>>();
    auto future = promise->get_future();
    loop_.Post([this, body, timeout, tries, promise] {
      RequestChannel::Request r;
      r.body = body;
      r.timeout = timeout;
      r.tries = tries;
      r.done = [promise](Result<std::string> reply) { promise->set_value(std::move(reply)); };
      channel_->Send(std::move(r));
    });
    return future;
  }

  zmq::context_t context_;
  transport::ZmqLoop loop_{"channel-test"};
  std::unique_ptr<RequestChannel> channel_;
};

TEST_F(RequestChannelTest, RepliesComeBackInOrder) {
  EchoRouter router(context_, 0);
  Make(router.endpoint());
  auto a = Send("a", 5s, 1);
  auto b = Send("b", 5s, 1);
  EXPECT_EQ(a.get().value(), "echo:a");
  EXPECT_EQ(b.get().value(), "echo:b");
}

TEST_F(RequestChannelTest, ATimedOutTryReconnectsAndResends) {
  EchoRouter router(context_, 1);
  Make(router.endpoint());
  // The dropped first try always times out; the answered second one has time to spare.
  auto r = Send("x", 2s, 3);
  EXPECT_EQ(r.get().value(), "echo:x");
  EXPECT_EQ(router.received(), 2);
  EXPECT_EQ(router.peers().size(), 2u);  // the second try came on a new connection
  EXPECT_EQ(testing::OnLoop(loop_, [&] { return channel_->timeouts(); }), 1u);
}

TEST_F(RequestChannelTest, GivesUpAfterTheLastTry) {
  EchoRouter router(context_, 2);  // drops both tries of "x", answers what comes after
  Make(router.endpoint());
  auto r = Send("x", 100ms, 2).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(router.received(), 2);
  // The channel keeps working for the next request.
  auto next = Send("y", 5s, 1).get();
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(*next, "echo:y");
}

TEST_F(RequestChannelTest, IdleSocketIsClosedAndReopened) {
  EchoRouter router(context_, 0);
  testing::OnLoop(loop_, [&] {
    channel_ = std::make_unique<RequestChannel>(
        loop_, context_, RequestChannel::Options{router.endpoint(), false, 50ms});
  });
  EXPECT_EQ(Send("a", 5s, 1).get().value(), "echo:a");
  ASSERT_TRUE(testing::WaitFor(
      [&] { return !testing::OnLoop(loop_, [&] { return channel_->socket_open(); }); }));
  EXPECT_EQ(Send("b", 5s, 1).get().value(), "echo:b");
}

}  // namespace
}  // namespace halite::minion
