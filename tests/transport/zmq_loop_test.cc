#include "halite/transport/zmq_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>

#include "halite/transport/worker_pool.h"

namespace halite::transport {
namespace {

using namespace std::chrono_literals;

TEST(ZmqLoopTest, PostedTasksRunInOrderOnTheLoopThread) {
  ZmqLoop loop("t-post");
  loop.Start();
  std::vector<int> seen;
  std::promise<void> done;
  for (int i = 0; i < 100; ++i) {
    loop.Post([&, i] {
      EXPECT_TRUE(loop.IsCurrentThread());
      seen.push_back(i);
      if (i == 99) done.set_value();
    });
  }
  ASSERT_EQ(done.get_future().wait_for(10s), std::future_status::ready);
  loop.Stop();
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);
}

TEST(ZmqLoopTest, RouterOnLoopAnswersManyReqClients) {
  zmq::context_t ctx;
  ZmqLoop loop("t-router");
  std::unique_ptr<zmq::socket_t> router;
  std::promise<std::string> endpoint;
  loop.Post([&] {
    router = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::router);
    router->set(zmq::sockopt::linger, 0);
    router->bind("tcp://127.0.0.1:*");
    endpoint.set_value(router->get(zmq::sockopt::last_endpoint));
    ZmqLoop::WatchId id = 0;
    id = loop.Watch(*router, [&loop, &router, &id] {
      std::vector<zmq::message_t> parts;
      for (;;) {
        zmq::message_t m;
        if (!router->recv(m, zmq::recv_flags::dontwait)) return;
        bool more = m.more();
        parts.push_back(std::move(m));
        if (!more) break;
      }
      std::string body = parts.back().to_string();
      for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        router->send(parts[i], zmq::send_flags::sndmore);
      }
      router->send(zmq::buffer("echo:" + body));
      loop.MarkDirty(id);
    });
    loop.AddShutdownHook([&] { router.reset(); });
  });
  loop.Start();
  std::string ep = endpoint.get_future().get();
  constexpr int kClients = 20;
  constexpr int kRounds = 50;
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      zmq::socket_t req(ctx, zmq::socket_type::req);
      req.set(zmq::sockopt::linger, 0);
      req.set(zmq::sockopt::rcvtimeo, 10000);
      req.connect(ep);
      for (int r = 0; r < kRounds; ++r) {
        std::string msg = std::to_string(c) + "/" + std::to_string(r);
        req.send(zmq::buffer(msg));
        zmq::message_t reply;
        auto got = req.recv(reply);
        ASSERT_TRUE(got.has_value()) << "no reply for " << msg;
        EXPECT_EQ(reply.to_string(), "echo:" + msg);
        answered++;
      }
    });
  }
  for (auto& t : clients) t.join();
  loop.Stop();
  EXPECT_EQ(answered.load(), kClients * kRounds);
}

TEST(ZmqLoopTest, TimersFireAndCanBeCancelled) {
  ZmqLoop loop("t-timer");
  loop.Start();
  std::promise<void> fired;
  std::atomic<int> repeats{0};
  std::atomic<bool> cancelled_ran{false};
  std::promise<void> repeated;
  ZmqLoop::TimerId every = 0;
  loop.Post([&] {
    auto cancelled = loop.RunAfter(1ms, [&] { cancelled_ran = true; });
    loop.CancelTimer(cancelled);
    loop.RunAfter(5ms, [&] { fired.set_value(); });
    every = loop.RunEvery(1ms, [&] {
      if (++repeats == 3) {
        loop.CancelTimer(every);
        repeated.set_value();
      }
    });
  });
  ASSERT_EQ(fired.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_EQ(repeated.get_future().wait_for(10s), std::future_status::ready);
  // A one-shot posted after the cancelled timer's deadline proves the loop passed it.
  std::promise<void> later;
  loop.Post([&] { loop.RunAfter(5ms, [&] { later.set_value(); }); });
  ASSERT_EQ(later.get_future().wait_for(10s), std::future_status::ready);
  loop.Stop();
  EXPECT_FALSE(cancelled_ran);
  EXPECT_EQ(repeats.load(), 3);
}

TEST(ZmqLoopTest, ShutdownHooksRunOnTheLoopThreadInReverseOrder) {
  ZmqLoop loop("t-stop");
  std::vector<int> order;
  loop.Post([&] {
    loop.AddShutdownHook([&] {
      EXPECT_TRUE(loop.IsCurrentThread());
      order.push_back(1);
    });
    loop.AddShutdownHook([&] { order.push_back(2); });
  });
  loop.Start();
  loop.Stop();
  loop.Stop();  // idempotent
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(WorkerPoolTest, RunsEveryTaskAndDrainsOnShutdown) {
  std::atomic<int> count{0};
  {
    WorkerPool pool("t-pool", 3);
    for (int i = 0; i < 1000; ++i) pool.Post([&] { count++; });
    pool.Shutdown();
    pool.Post([&] { count += 1000; });  // dropped after shutdown
  }
  EXPECT_EQ(count.load(), 1000);
}

}  // namespace
}  // namespace halite::transport
