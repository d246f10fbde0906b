// RequestServer over a real ZeroMQ socket (ipc in a temp dir): shedding when the workers'
// queue is full, sign-ins dropped after waiting past auth_queue_timeout_ms, and a handler
// that throws costing only its own request.
#include "halite/master/request_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>

#include "halite/master/context.h"
#include "halite/wire/msgpack.h"
#include "wait.h"

namespace halite::master {
namespace {

using namespace std::chrono_literals;
using halite::testing::WaitUntil;

// Holds handlers until Open(); opens on destruction too, so a held worker is let go even
// when an assertion ends the test early.
class Gate {
 public:
  ~Gate() { Open(); }
  void Open() {
    if (!opened_) promise_.set_value();
    opened_ = true;
  }
  std::shared_future<void> Opened() const { return opened_future_; }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_future_ = promise_.get_future().share();
  bool opened_ = false;
};

class RequestServerTest : public ::testing::Test {
 protected:
  void StartServer(RequestServer::Handler handler, std::size_t max_queued) {
    endpoint_ = "ipc://" + (dir_ / "req.ipc").string();
    RequestServerOptions options;
    options.endpoints = {endpoint_};
    options.max_queued = max_queued;
    loop_.Start();
    server_ =
        std::make_unique<RequestServer>(context_, loop_, workers_, std::move(handler), options);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    workers_.Shutdown();
    loop_.Stop();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_ = [] {
    auto d = std::filesystem::temp_directory_path() /
             ("halite-reqsrv-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(d);
    return d;
  }();
  zmq::context_t context_;
  transport::ZmqLoop loop_{"req-test"};
  transport::WorkerPool workers_{"req-test-w", 1};
  std::unique_ptr<RequestServer> server_;
  std::string endpoint_;
};

TEST_F(RequestServerTest, AFullQueueShedsAndCountsTheRest) {
  Gate gate;
  std::shared_future<void> released = gate.Opened();
  StartServer(
      [released](std::string body, RequestServer::Reply reply, auto, auto) {
        released.wait();  // the only worker is held: everything else queues
        reply(body);
      },
      /*max_queued=*/2);
  zmq::socket_t dealer(context_, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint_);
  constexpr int kSent = 10;
  for (int i = 0; i < kSent; ++i) {
    dealer.send(zmq::message_t(), zmq::send_flags::sndmore);  // REQ's empty delimiter
    dealer.send(zmq::buffer(wire::Pack(wire::Value(i))), zmq::send_flags::none);
  }
  ASSERT_TRUE(WaitUntil([&] { return server_->received() == kSent; }));
  // One in the worker, at most two queued: the other seven (at least) were shed.
  EXPECT_GE(server_->shed(), 7u);
  EXPECT_LE(server_->shed(), 8u);
  const std::uint64_t kept = kSent - server_->shed();
  gate.Open();
  std::uint64_t answered = 0;
  while (answered < kept) {
    zmq::pollitem_t item{static_cast<void*>(dealer), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 10s);
    ASSERT_TRUE(item.revents & ZMQ_POLLIN) << "only " << answered << " of " << kept << " answered";
    zmq::message_t delimiter, body;
    ASSERT_TRUE(dealer.recv(delimiter));
    ASSERT_TRUE(dealer.recv(body));
    ++answered;
  }
  EXPECT_EQ(server_->in_flight(), 0);
}

// The one worker is held by a gate until every sign-in has waited past auth_queue_timeout_ms,
// so the drop does not depend on how long RSA takes. The sign-ins name an unknown enc_algo:
// one that is not dropped is answered at once ("bad enc algo") without any key work.
TEST_F(RequestServerTest, SignInsThatWaitedPastAuthQueueTimeoutAreDroppedUnanswered) {
  config::MasterConfig config;
  config.auth_queue_timeout_ms = 300ms;
  Counters counters;
  MasterContext ctx;
  ctx.config.Set(std::make_shared<const config::MasterConfig>(config));
  ctx.counters = &counters;
  Gate gate;
  std::shared_future<void> released = gate.Opened();
  const std::string hold = wire::Pack(wire::Value("hold"));
  StartServer(
      [&ctx, released, hold](std::string body, RequestServer::Reply reply,
                             std::chrono::steady_clock::time_point received, auto) {
        if (body == hold) {
          released.wait();
          reply(body);
          return;
        }
        HandleRequest(ctx, std::move(body), std::move(reply), received);
      },
      /*max_queued=*/100);
  zmq::socket_t dealer(context_, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint_);
  auto send = [&](const std::string& body) {
    dealer.send(zmq::message_t(), zmq::send_flags::sndmore);  // REQ's empty delimiter
    dealer.send(zmq::buffer(body), zmq::send_flags::none);
  };
  auto sign_in = [](const std::string& id) {
    return wire::Pack(wire::Value::MapOf(
        {{"enc", "clear"},
         {"version", 3},
         {"load", wire::Value::MapOf({{"cmd", "_auth"}, {"id", id}, {"enc_algo", "bogus"}})}}));
  };
  constexpr int kHeld = 5;
  send(hold);
  for (int i = 0; i < kHeld; ++i) send(sign_in("held" + std::to_string(i)));
  ASSERT_TRUE(WaitUntil([&] { return server_->received() == kHeld + 1; }));
  // Every held sign-in was read by now: once the timeout has passed, each has waited longer.
  const auto all_read = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil(
      [&] { return std::chrono::steady_clock::now() - all_read > config.auth_queue_timeout_ms; }));
  gate.Open();
  send(sign_in("fresh"));  // queued behind the held ones, answered: proof the worker ran them
  std::vector<std::string> replies;
  while (replies.size() < 2) {
    zmq::pollitem_t item{static_cast<void*>(dealer), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 10s);
    ASSERT_TRUE(item.revents & ZMQ_POLLIN) << replies.size() << " replies";
    zmq::message_t delimiter, body;
    ASSERT_TRUE(dealer.recv(delimiter));
    ASSERT_TRUE(dealer.recv(body));
    replies.push_back(body.to_string());
  }
  EXPECT_EQ(replies[0], hold);
  EXPECT_NE(replies[1].find("bad enc algo"), std::string::npos);
  EXPECT_EQ(counters.auth_shed.load(), static_cast<std::uint64_t>(kHeld));
  // Nothing else comes: the held sign-ins were dropped, not answered late.
  zmq::pollitem_t item{static_cast<void*>(dealer), 0, ZMQ_POLLIN, 0};
  EXPECT_EQ(zmq::poll(&item, 1, 0ms), 0);
}

TEST_F(RequestServerTest, AThrowingHandlerIsAnsweredAndTheServerKeepsServing) {
  StartServer(
      [](std::string body, RequestServer::Reply reply, auto, auto) {
        if (body == wire::Pack(wire::Value("boom"))) throw std::length_error("boom");
        reply(body);
      },
      100);
  auto ask = [&](const std::string& text) -> std::optional<std::string> {
    zmq::socket_t req(context_, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.connect(endpoint_);
    req.send(zmq::buffer(wire::Pack(wire::Value(text))));
    zmq::pollitem_t item{static_cast<void*>(req), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 10s);
    if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
    zmq::message_t reply;
    (void)req.recv(reply);
    auto v = wire::Unpack(reply.to_string_view());
    return v.ok() && v->str() ? std::optional<std::string>(*v->str()) : std::nullopt;
  };
  EXPECT_EQ(ask("boom"), std::optional<std::string>("Server-side exception handling payload"));
  EXPECT_EQ(server_->handler_failures(), 1u);
  EXPECT_EQ(ask("hello"), std::optional<std::string>("hello"));
}

}  // namespace
}  // namespace halite::master
