// RequestServer over a real ZeroMQ socket (ipc in a temp dir): shedding when the workers'
// queue is full, and a handler that throws costing only its own request.
#include "halite/master/request_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>

#include "halite/wire/msgpack.h"

namespace halite::master {
namespace {

using namespace std::chrono_literals;

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

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
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  struct Releaser {  // lets the held worker go even when an assertion ends the test early
    std::promise<void>& p;
    bool done = false;
    void Now() {
      if (!done) p.set_value();
      done = true;
    }
    ~Releaser() { Now(); }
  } releaser{release};
  StartServer(
      [released](std::string body, RequestServer::Reply reply, auto) {
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
  releaser.Now();
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

TEST_F(RequestServerTest, AThrowingHandlerIsAnsweredAndTheServerKeepsServing) {
  StartServer(
      [](std::string body, RequestServer::Reply reply, auto) {
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
