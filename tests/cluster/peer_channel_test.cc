// PeerChannel over real TCP on loopback. Each test takes its own 127.a.b.0/24 (from the pid
// and a counter) so tests and concurrent test processes never share an address; every
// master listens on port 4520 of its own address, as in a real cluster.
#include "halite/cluster/peer_channel.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "halite/cluster/peer_frame.h"
#include "halite/cluster/publish_forwarding.h"
#include "halite/keys/fs.h"
#include "loopback.h"

namespace halite::cluster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = 30s;

// Polls `done` until it holds or the deadline passes (for state with no notification, such
// as Status()).
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = kDeadline) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// What one master's handler received, per sending peer, in arrival order.
class Inbox {
 public:
  void Add(const std::string& peer, PeerMessage message) {
    {
      std::lock_guard lock(mu_);
      by_peer_[peer].push_back(std::move(message));
    }
    cv_.notify_all();
  }
  bool WaitForCount(const std::string& peer, std::size_t n,
                    std::chrono::milliseconds timeout = kDeadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return by_peer_[peer].size() >= n; });
  }
  std::vector<std::string> Payloads(const std::string& peer) {
    std::lock_guard lock(mu_);
    std::vector<std::string> payloads;
    for (const PeerMessage& m : by_peer_[peer]) payloads.push_back(m.payload);
    return payloads;
  }
  std::vector<PeerMessage> Messages(const std::string& peer) {
    std::lock_guard lock(mu_);
    return by_peer_[peer];
  }
  std::size_t Total() {
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    for (const auto& [peer, messages] : by_peer_) n += messages.size();
    return n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<PeerMessage>> by_peer_;
};

// One master: its own context (one ZAP handler per context), loop and channel.
class Node {
 public:
  explicit Node(PeerChannelOptions options) : loop_("cl-" + options.self_id) {
    channel_ = std::make_unique<PeerChannel>(context_, loop_, std::move(options));
    channel_->SetHandler([this](const std::string& peer, PeerMessage message) {
      inbox_.Add(peer, std::move(message));
    });
    loop_.Start();
  }
  ~Node() {
    channel_.reset();  // closes on the running loop
    loop_.Stop();
  }

  halite::Status Start() { return channel_->Start(); }
  PeerChannel& channel() { return *channel_; }
  Inbox& inbox() { return inbox_; }
  PeerLinkStatus LinkTo(const std::string& id) const {
    for (PeerLinkStatus& status : channel_->Status()) {
      if (status.id == id) return status;
    }
    ADD_FAILURE() << "no link to " << id;
    return {};
  }

 private:
  zmq::context_t context_;
  Inbox inbox_;
  transport::ZmqLoop loop_;
  std::unique_ptr<PeerChannel> channel_;
};

class PeerChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-cluster-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    subnet_ = halite::testing::LoopbackSubnet();
  }
  void TearDown() override {
    nodes_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path shared() const { return dir_ / "shared"; }
  fs::path Pki(const std::string& id) const { return dir_ / ("pki-" + id); }
  std::string Endpoint(const std::string& id) const {
    return "tcp://" + subnet_ + std::to_string(hosts_.at(id)) + ":4520";
  }

  // A master of the cluster. With `publish_key` its CURVE key exists in the shared dir, as
  // after its first start.
  void Declare(const std::string& id, bool publish_key = true) {
    hosts_[id] = 2 + static_cast<int>(hosts_.size());
    order_.push_back(id);
    if (publish_key) {
      ASSERT_TRUE(Keys(id).ok());
    }
  }
  Result<CurveKeyPair> Keys(const std::string& id) {
    return LoadOrCreateCurveKeys(Pki(id), shared(), id);
  }

  PeerChannelOptions OptionsFor(const std::string& id) {
    PeerChannelOptions options;
    options.self_id = id;
    options.bind_endpoint = Endpoint(id);
    for (const std::string& other : order_) {
      if (other != id) options.peers.push_back({other, Endpoint(other)});
    }
    options.cluster_pki_dir = shared();
    auto keys = Keys(id);
    EXPECT_TRUE(keys.ok()) << keys.error().ToString();
    if (keys.ok()) options.keys = *keys;
    options.heartbeat_interval = heartbeat_;
    options.link_timeout = link_timeout_;
    options.key_poll_interval = 100ms;
    return options;
  }

  Node& Launch(const std::string& id,
               const std::function<void(PeerChannelOptions&)>& tweak = nullptr) {
    PeerChannelOptions options = OptionsFor(id);
    if (tweak) tweak(options);
    auto node = std::make_unique<Node>(std::move(options));
    halite::Status started = node->Start();
    EXPECT_TRUE(started.ok()) << started.error().ToString();
    Node& ref = *node;
    nodes_[id] = std::move(node);
    return ref;
  }
  void Kill(const std::string& id) { nodes_.erase(id); }
  Node& node(const std::string& id) { return *nodes_.at(id); }

  bool MeshConnected() {
    for (auto& [id, node] : nodes_) {
      for (const PeerLinkStatus& link : node->channel().Status()) {
        if (nodes_.count(link.id) != 0 && !link.connected) return false;
      }
    }
    return true;
  }

  std::chrono::milliseconds heartbeat_{100};
  // Generous: under ASan with ctest -j2 a loop can stall for over a second, and a link that
  // times out while a test expects it up fails that test. Tests that need a link to go down
  // wait for it (WaitUntil, kDeadline), so a long timeout costs time, never a result.
  std::chrono::milliseconds link_timeout_{5000};
  fs::path dir_;
  std::string subnet_;
  std::map<std::string, int> hosts_;
  std::vector<std::string> order_;
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

std::vector<std::string> Numbered(const std::string& prefix, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

TEST_F(PeerChannelTest, EveryBroadcastReachesEveryOtherMasterOnceInOrder) {
  heartbeat_ = 500ms;  // the defaults
  link_timeout_ = 3000ms;
  const std::vector<std::string> ids = {"m1", "m2", "m3"};
  for (const auto& id : ids) Declare(id);
  for (const auto& id : ids) Launch(id);
  ASSERT_TRUE(WaitUntil([&] { return MeshConnected(); }));

  constexpr int kMessages = 1000;
  const auto start = Clock::now();
  for (int i = 0; i < kMessages; ++i) {
    for (const auto& id : ids)
      node(id).channel().Broadcast({"event", id + "/" + std::to_string(i)});
  }
  for (const auto& receiver : ids) {
    for (const auto& sender : ids) {
      if (sender == receiver) continue;
      ASSERT_TRUE(node(receiver).inbox().WaitForCount(sender, kMessages))
          << receiver << " from " << sender;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double rate = 3.0 * 2 * kMessages / seconds;
  std::cout << "[   PERF   ] 3 masters x " << kMessages << " broadcasts: " << 6 * kMessages
            << " deliveries in " << seconds << " s = " << static_cast<long>(rate)
            << " deliveries/s\n";
  RecordProperty("deliveries_per_second", static_cast<int>(rate));

  // A marker after everything: anything duplicated would sit before it.
  for (const auto& id : ids) node(id).channel().Broadcast({"hello", "marker"});
  for (const auto& receiver : ids) {
    for (const auto& sender : ids) {
      if (sender == receiver) continue;
      ASSERT_TRUE(node(receiver).inbox().WaitForCount(sender, kMessages + 1));
      std::vector<std::string> expected = Numbered(sender + "/", 0, kMessages);
      expected.push_back("marker");
      EXPECT_EQ(node(receiver).inbox().Payloads(sender), expected) << receiver << "<-" << sender;
      EXPECT_EQ(node(receiver).inbox().Messages(sender).back().kind, "hello");
      EXPECT_EQ(node(receiver).inbox().Messages(sender).front().kind, "event");
    }
  }
  // Everything is acknowledged in the end.
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& id : ids) {
      for (const PeerLinkStatus& link : node(id).channel().Status()) {
        if (link.backlog != 0 || link.sent != kMessages + 1) return false;
      }
    }
    return true;
  }));
  for (const auto& id : ids) {
    for (const PeerLinkStatus& link : node(id).channel().Status()) {
      EXPECT_EQ(link.received, kMessages + 1u);
      EXPECT_EQ(link.dropped, 0u);
      EXPECT_TRUE(link.connected);
      EXPECT_EQ(link.problem, "");
    }
  }
}

TEST_F(PeerChannelTest, RestartedMasterGetsWhatItMissedExactlyOnce) {
  for (const char* id : {"m1", "m2", "m3"}) Declare(id);
  for (const char* id : {"m1", "m2", "m3"}) Launch(id);
  ASSERT_TRUE(WaitUntil([&] { return MeshConnected(); }));
  for (const char* id : {"m1", "m2"}) node(id).channel().Broadcast({"event", "before"});
  ASSERT_TRUE(node("m3").inbox().WaitForCount("m1", 1));
  ASSERT_TRUE(node("m3").inbox().WaitForCount("m2", 1));
  // Acknowledged, so the restarted m3 must not see "before" again.
  ASSERT_TRUE(WaitUntil([&] {
    return node("m1").LinkTo("m3").backlog == 0 && node("m2").LinkTo("m3").backlog == 0;
  }));

  Kill("m3");
  constexpr int kMissed = 500;
  for (int i = 0; i < kMissed; ++i) {
    for (const char* id : {"m1", "m2"}) {
      node(id).channel().Broadcast({"event", std::string(id) + "/" + std::to_string(i)});
    }
  }
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m3").backlog == kMissed; }));
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", kMissed + 1));  // the others carry on

  Launch("m3");
  for (const char* sender : {"m1", "m2"}) {
    ASSERT_TRUE(node("m3").inbox().WaitForCount(sender, kMissed)) << sender;
    node(sender).channel().Broadcast({"event", "marker"});
    ASSERT_TRUE(node("m3").inbox().WaitForCount(sender, kMissed + 1)) << sender;
    std::vector<std::string> expected = Numbered(std::string(sender) + "/", 0, kMissed);
    expected.push_back("marker");
    EXPECT_EQ(node("m3").inbox().Payloads(sender), expected) << sender;
  }
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m3").backlog == 0; }));
  EXPECT_EQ(node("m1").LinkTo("m3").dropped, 0u);
}

TEST_F(PeerChannelTest, FullBacklogDropsTheOldestAndDeliversTheNewest) {
  Declare("m1");
  Declare("m2");  // has a key, but is down
  Launch("m1", [](PeerChannelOptions& options) { options.event_backlog_max = 100; });
  for (int i = 0; i < 300; ++i) node("m1").channel().Broadcast({"event", std::to_string(i)});
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus link = node("m1").LinkTo("m2");
    return link.dropped == 200 && link.backlog == 100;
  }));
  EXPECT_FALSE(node("m1").LinkTo("m2").connected);

  Launch("m2");
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 100));
  // Until acknowledged the 100 still fill the backlog, and a new message would push one out.
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").backlog == 0; }));
  node("m1").channel().Broadcast({"event", "marker"});
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 101));
  std::vector<std::string> expected = Numbered("", 200, 300);
  expected.push_back("marker");
  EXPECT_EQ(node("m2").inbox().Payloads("m1"), expected);
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").sent == 101; }));
  PeerLinkStatus link = node("m1").LinkTo("m2");
  EXPECT_EQ(link.dropped, 200u);
  EXPECT_EQ(link.backlog, 0u);
}

// The backlog is bounded in bytes as well as in count: each event here is 100 bytes (its
// kind and payload), so a budget of 1,000 holds the newest ten.
TEST_F(PeerChannelTest, BacklogOverItsBytesDropsTheOldest) {
  Declare("m1");
  Declare("m2");  // has a key, but is down
  Launch("m1", [](PeerChannelOptions& options) { options.event_backlog_max_bytes = 1000; });
  auto payload = [](int i) {
    std::string p = std::to_string(i);
    return p + std::string(95 - p.size(), '.');  // "event" + 95 bytes
  };
  for (int i = 0; i < 30; ++i) node("m1").channel().Broadcast({"event", payload(i)});
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus link = node("m1").LinkTo("m2");
    return link.dropped == 20 && link.backlog == 10 && link.events.queued_bytes == 1000;
  }));
  Launch("m2");
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 10));
  std::vector<std::string> expected;
  for (int i = 20; i < 30; ++i) expected.push_back(payload(i));
  EXPECT_EQ(node("m2").inbox().Payloads("m1"), expected);
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").events.queued_bytes == 0; }));
}

// A minion that floods _minion_event while a peer is away must not cost that peer a job:
// publishes travel in their own lossless queue, events in a lossy backlog that drops and
// counts.
TEST_F(PeerChannelTest, EventFloodNeverPushesOutPublishes) {
  Declare("m1");
  Declare("m2");  // has a key, but is down
  Launch("m1", [](PeerChannelOptions& options) { options.event_backlog_max = 100; });
  constexpr int kPublishes = 50;
  constexpr int kEventsPerPublish = 20;
  constexpr int kEvents = kPublishes * kEventsPerPublish;
  for (int p = 0; p < kPublishes; ++p) {
    halite::Status queued =
        node("m1").channel().BroadcastPublish({"publish", "job" + std::to_string(p)});
    ASSERT_TRUE(queued.ok()) << queued.error().ToString();
    for (int e = 0; e < kEventsPerPublish; ++e) {
      node("m1").channel().Broadcast({"event", std::to_string(p * kEventsPerPublish + e)});
    }
  }
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus link = node("m1").LinkTo("m2");
    return link.dropped + link.backlog == kPublishes + kEvents;
  }));
  {
    PeerLinkStatus link = node("m1").LinkTo("m2");
    EXPECT_EQ(link.publishes.queued, static_cast<std::size_t>(kPublishes));
    EXPECT_EQ(link.events.queued, 100u);
    EXPECT_EQ(link.events.dropped, static_cast<std::uint64_t>(kEvents - 100));
  }

  Launch("m2");
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus link = node("m1").LinkTo("m2");
    return link.connected && link.backlog == 0;
  }));
  std::vector<std::string> publishes;
  std::vector<std::string> events;
  for (const PeerMessage& m : node("m2").inbox().Messages("m1")) {
    (m.kind == "publish" ? publishes : events).push_back(m.payload);
  }
  EXPECT_EQ(publishes, Numbered("job", 0, kPublishes));
  EXPECT_EQ(events, Numbered("", kEvents - 100, kEvents));
  PeerLinkStatus link = node("m1").LinkTo("m2");
  EXPECT_EQ(link.dropped, static_cast<std::uint64_t>(kEvents - 100));
  EXPECT_EQ(link.events.dropped, static_cast<std::uint64_t>(kEvents - 100));
  EXPECT_EQ(link.publishes.dropped, 0u);
  EXPECT_EQ(link.publishes.sent, static_cast<std::uint64_t>(kPublishes));
  EXPECT_EQ(link.events.sent, 100u);
  PeerLinkStatus back = node("m2").LinkTo("m1");
  EXPECT_EQ(back.publishes.received, static_cast<std::uint64_t>(kPublishes));
  EXPECT_EQ(back.events.received, 100u);
}

// The publish queue is bounded: when a peer holds publish_queue_max unacknowledged
// publishes, the next one is refused for every peer (nothing is lost silently), and room
// comes back as the peer acknowledges.
TEST_F(PeerChannelTest, FullPublishQueueRefusesAndRecovers) {
  Declare("m1");
  Declare("m2");  // down at first
  Declare("m3");
  Launch("m1", [](PeerChannelOptions& options) { options.publish_queue_max = 3; });
  Launch("m3");
  for (int p = 0; p < 3; ++p) {
    ASSERT_TRUE(node("m1").channel().BroadcastPublish({"publish", "job" + std::to_string(p)}).ok());
  }
  // m3 is up and acknowledges, so only m2's queue stays full.
  ASSERT_TRUE(node("m3").inbox().WaitForCount("m1", 3));
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m3").publishes.queued == 0; }));
  halite::Status refused = node("m1").channel().BroadcastPublish({"publish", "job3"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("m2"), std::string::npos) << refused.error().message;
  EXPECT_EQ(refused.error().message.find("m3"), std::string::npos) << refused.error().message;
  EXPECT_EQ(node("m1").channel().publishes_refused(), 1u);
  EXPECT_EQ(node("m1").LinkTo("m2").publishes_refused, 1u);
  EXPECT_EQ(node("m1").LinkTo("m3").publishes_refused, 0u);
  EXPECT_FALSE(node("m1").channel().BroadcastPublish({"publish", "job3"}).ok());
  // Events are not held back by a full publish queue; the refused publishes reached no one.
  node("m1").channel().Broadcast({"event", "e"});
  ASSERT_TRUE(node("m3").inbox().WaitForCount("m1", 4));
  EXPECT_EQ(node("m3").inbox().Payloads("m1"),
            (std::vector<std::string>{"job0", "job1", "job2", "e"}));

  Launch("m2");
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").publishes.queued == 0; }));
  halite::Status queued = node("m1").channel().BroadcastPublish({"publish", "job3"});
  ASSERT_TRUE(queued.ok()) << queued.error().ToString();
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 5));
  std::vector<std::string> at_m2;
  for (const PeerMessage& m : node("m2").inbox().Messages("m1")) {
    if (m.kind == "publish") at_m2.push_back(m.payload);
  }
  EXPECT_EQ(at_m2, Numbered("job", 0, 4));
  EXPECT_EQ(node("m1").channel().publishes_refused(), 2u);
}

// A publish the peer could not take within publish_max_age is given up and counted: the
// receiving master would refuse it as stale, and keeping it would hold the queue full.
TEST_F(PeerChannelTest, UnacknowledgedPublishesExpire) {
  Declare("m1");
  Declare("m2");  // never started
  Launch("m1", [](PeerChannelOptions& options) {
    options.publish_queue_max = 2;
    options.publish_max_age = std::chrono::seconds(1);
  });
  ASSERT_TRUE(node("m1").channel().BroadcastPublish({"publish", "a"}).ok());
  ASSERT_TRUE(node("m1").channel().BroadcastPublish({"publish", "b"}).ok());
  EXPECT_FALSE(node("m1").channel().BroadcastPublish({"publish", "c"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").publishes.dropped == 2; }));
  EXPECT_EQ(node("m1").LinkTo("m2").publishes.queued, 0u);
  EXPECT_TRUE(node("m1").channel().BroadcastPublish({"publish", "d"}).ok());
  EXPECT_EQ(node("m1").channel().publishes_refused(), 1u);
}

TEST_F(PeerChannelTest, StatusShowsUpAndDownPeers) {
  Declare("m1");
  Declare("m2");
  Declare("m3");         // has a key, never started
  Declare("m4", false);  // never published a key
  Launch("m1");
  Launch("m2");
  {
    PeerLinkStatus m4 = node("m1").LinkTo("m4");
    EXPECT_FALSE(m4.connected);
    EXPECT_NE(m4.problem.find("peers/m4.curve"), std::string::npos) << m4.problem;
  }
  const auto before = std::chrono::system_clock::now();
  for (int i = 0; i < 5; ++i) node("m1").channel().Broadcast({"event", std::to_string(i)});
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus m2 = node("m1").LinkTo("m2");
    return m2.connected && m2.backlog == 0 && m2.sent == 5;
  }));

  std::vector<PeerLinkStatus> status = node("m1").channel().Status();
  ASSERT_EQ(status.size(), 3u);
  EXPECT_EQ(status[0].id, "m2");
  EXPECT_EQ(status[0].endpoint, Endpoint("m2"));
  EXPECT_TRUE(status[0].connected);
  ASSERT_TRUE(status[0].last_contact.has_value());
  EXPECT_GE(*status[0].last_contact, before - 1s);
  EXPECT_LE(*status[0].last_contact, std::chrono::system_clock::now());
  EXPECT_EQ(status[0].problem, "");

  EXPECT_EQ(status[1].id, "m3");
  EXPECT_FALSE(status[1].connected);
  EXPECT_FALSE(status[1].last_contact.has_value());
  EXPECT_EQ(status[1].backlog, 5u);
  EXPECT_EQ(status[1].sent, 0u);
  EXPECT_NE(status[1].problem.find("no reply"), std::string::npos) << status[1].problem;

  EXPECT_EQ(status[2].id, "m4");
  EXPECT_FALSE(status[2].connected);
  EXPECT_EQ(status[2].backlog, 5u);
  EXPECT_NE(status[2].problem.find("peers/m4.curve"), std::string::npos) << status[2].problem;

  // m2 goes away: the link goes down after link_timeout, last contact stays.
  Kill("m2");
  ASSERT_TRUE(WaitUntil([&] { return !node("m1").LinkTo("m2").connected; }));
  PeerLinkStatus m2 = node("m1").LinkTo("m2");
  EXPECT_TRUE(m2.last_contact.has_value());
  EXPECT_NE(m2.problem.find("no reply"), std::string::npos) << m2.problem;
  node("m1").channel().Broadcast({"event", "while down"});
  ASSERT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").backlog == 1; }));
}

TEST_F(PeerChannelTest, PeerKeyPublishedLaterIsPickedUp) {
  Declare("m1");
  Declare("m2", false);
  Launch("m1");
  node("m1").channel().Broadcast({"event", "early"});
  EXPECT_NE(node("m1").LinkTo("m2").problem.find("peers/m2.curve"), std::string::npos);

  Launch("m2");  // publishes its key; m1 re-reads it
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 1));
  EXPECT_EQ(node("m2").inbox().Payloads("m1"), std::vector<std::string>{"early"});
  node("m2").channel().Broadcast({"event", "back"});
  ASSERT_TRUE(node("m1").inbox().WaitForCount("m2", 1));
  EXPECT_TRUE(WaitUntil([&] { return node("m1").LinkTo("m2").problem.empty(); }));
}

// A client that holds a configured peer's key (m3's) but speaks raw frames, to check how the
// receiver treats garbage, duplicates, gaps and restarts.
class FakePeer {
 public:
  FakePeer(const CurveKeyPair& own, const std::string& server_key, const std::string& endpoint)
      : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::curve_serverkey, server_key);
    socket_.set(zmq::sockopt::curve_publickey, own.public_key);
    socket_.set(zmq::sockopt::curve_secretkey, own.secret_key);
    socket_.set(zmq::sockopt::rcvtimeo, 200);
    socket_.connect(endpoint);
  }
  void Send(const std::string& frame) { socket_.send(zmq::buffer(frame)); }
  void SendMultipart() {
    socket_.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
    socket_.send(zmq::str_buffer("b"));
  }
  // Waits for an ack that satisfies `want`.
  std::optional<AckFrame> WaitAck(const std::function<bool(const AckFrame&)>& want) {
    const auto deadline = Clock::now() + kDeadline;
    while (Clock::now() < deadline) {
      zmq::message_t message;
      if (!socket_.recv(message)) continue;
      auto ack = DecodeAckFrame(message.to_string_view());
      if (ack.ok() && want(*ack)) return *ack;
    }
    return std::nullopt;
  }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

TEST_F(PeerChannelTest, ReceiverDropsGarbageDuplicatesAndStaleEpochsAndAsksForGaps) {
  Declare("m1");
  Declare("m3");
  Node& m1 = Launch("m1");
  FakePeer fake(Keys("m3").value(), Keys("m1")->public_key, Endpoint("m1"));
  constexpr std::uint64_t kEpoch = 77;
  fake.Send("not msgpack");
  fake.Send("\x93\x01\x02\x03");  // msgpack, not a map
  fake.SendMultipart();
  fake.Send(EncodeAckFrame({1, kEpoch, false}));  // wrong direction
  fake.Send(EncodeDataFrame(1, kEpoch, 1, "event", "one"));
  fake.Send(EncodeDataFrame(1, kEpoch, 1, "event", "one again"));  // duplicate
  fake.Send(EncodeDataFrame(3, kEpoch, 1, "event", "three"));      // gap: 2 is missing
  auto resend = fake.WaitAck([](const AckFrame& ack) { return ack.resend; });
  ASSERT_TRUE(resend.has_value());
  EXPECT_EQ(resend->ack, 1u);
  EXPECT_EQ(resend->epoch, kEpoch);
  fake.Send(EncodeDataFrame(2, kEpoch, 1, "event", "two"));
  fake.Send(EncodeDataFrame(3, kEpoch, 1, "event", "three"));
  fake.Send(EncodeHeartbeatFrame({kEpoch, 1, 4}));
  ASSERT_TRUE(fake.WaitAck([](const AckFrame& ack) { return ack.ack == 3 && !ack.resend; }));

  // A heartbeat that says 4 and 5 were sent: the receiver asks for them.
  fake.Send(EncodeHeartbeatFrame({kEpoch, 1, 6}));
  ASSERT_TRUE(fake.WaitAck([](const AckFrame& ack) { return ack.resend && ack.ack == 3; }));

  // The sender restarts (new epoch, starting at its low); then a late frame of the old one.
  fake.Send(EncodeDataFrame(10, kEpoch + 1, 10, "event", "new run"));
  fake.Send(EncodeDataFrame(4, kEpoch, 1, "event", "stale"));
  // The sender dropped 11..19 on overflow: low moves past them.
  fake.Send(EncodeDataFrame(20, kEpoch + 1, 20, "event", "after overflow"));
  ASSERT_TRUE(m1.inbox().WaitForCount("m3", 5));
  fake.Send(EncodeHeartbeatFrame({kEpoch + 1, 21, 21}));
  ASSERT_TRUE(
      fake.WaitAck([](const AckFrame& ack) { return ack.epoch == kEpoch + 1 && ack.ack == 20; }));
  EXPECT_EQ(m1.inbox().Payloads("m3"),
            (std::vector<std::string>{"one", "two", "three", "new run", "after overflow"}));
  EXPECT_EQ(m1.LinkTo("m3").received, 5u);
  EXPECT_TRUE(m1.LinkTo("m3").last_contact.has_value());
  EXPECT_EQ(m1.channel().unauthenticated_rejections(), 0u);
}

// A receiver that holds m2's key and answers by hand, to watch what the sender does.
TEST_F(PeerChannelTest, SenderGoesBackWhenTheReceiverAsksForAResend) {
  Declare("m1");
  Declare("m2");
  Node& m1 = Launch("m1");
  zmq::context_t context;  // no ZAP handler here: the fake admits anyone
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::rcvtimeo, 200);
  router.set(zmq::sockopt::curve_server, true);
  router.set(zmq::sockopt::curve_secretkey, Keys("m2")->secret_key);
  router.bind(Endpoint("m2"));
  for (const char* text : {"a", "b", "c"}) m1.channel().Broadcast({"event", text});

  std::string route;
  std::vector<DataFrame> data;
  // Reads until `done`, answering heartbeats so that m1 sees the link up.
  auto read_until = [&](const std::function<bool()>& done) {
    const auto deadline = Clock::now() + kDeadline;
    while (!done() && Clock::now() < deadline) {
      zmq::message_t id;
      zmq::message_t body;
      if (!router.recv(id)) continue;
      ASSERT_TRUE(router.recv(body));
      route = id.to_string();
      auto frame = DecodeSenderFrame(body.to_string_view(), 1 << 20);
      ASSERT_TRUE(frame.ok()) << frame.error().ToString();
      if (auto* d = std::get_if<DataFrame>(&*frame)) {
        data.push_back(*d);
      } else {
        const auto& hb = std::get<HeartbeatFrame>(*frame);
        router.send(zmq::buffer(route), zmq::send_flags::sndmore);
        router.send(zmq::buffer(EncodeAckFrame({hb.low - 1, hb.epoch, false})));
      }
    }
  };
  read_until([&] { return data.size() >= 3; });
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data[0].seq, 1u);
  EXPECT_EQ(data[0].payload, "a");
  EXPECT_EQ(data[2].seq, 3u);
  EXPECT_EQ(data[2].epoch, m1.channel().epoch());

  // "I have 1; send again from 2."
  router.send(zmq::buffer(route), zmq::send_flags::sndmore);
  router.send(zmq::buffer(EncodeAckFrame({1, m1.channel().epoch(), true})));
  const std::size_t before = data.size();
  read_until([&] { return data.size() >= before + 2; });
  ASSERT_GE(data.size(), before + 2);
  EXPECT_EQ(data[before].seq, 2u);
  EXPECT_EQ(data[before].payload, "b");
  EXPECT_EQ(data[before].low, 2u);  // 1 was acknowledged
  EXPECT_EQ(data[before + 1].seq, 3u);

  router.send(zmq::buffer(route), zmq::send_flags::sndmore);
  router.send(zmq::buffer(EncodeAckFrame({3, m1.channel().epoch(), false})));
  ASSERT_TRUE(WaitUntil([&] {
    PeerLinkStatus link = m1.LinkTo("m2");
    return link.backlog == 0 && link.sent == 3;
  }));
}

TEST_F(PeerChannelTest, OversizedMessageIsNotSent) {
  Declare("m1");
  Declare("m2");
  Node& m1 = Launch("m1", [](PeerChannelOptions& options) { options.max_message_bytes = 2048; });
  Node& m2 = Launch("m2");
  m1.channel().Broadcast({"event", std::string(4096, 'x')});
  m1.channel().Broadcast({"event", "small"});
  ASSERT_TRUE(m2.inbox().WaitForCount("m1", 1));
  EXPECT_EQ(m2.inbox().Payloads("m1"), std::vector<std::string>{"small"});
  EXPECT_EQ(m1.LinkTo("m2").dropped, 0u);
}

enum class Rogue { kRandomCurveKey, kNoCurve, kPeerPublicKeyWithoutItsSecret };

class PeerChannelRogueTest : public PeerChannelTest, public ::testing::WithParamInterface<Rogue> {};

TEST_P(PeerChannelRogueTest, UnauthenticatedClientGetsNothingInOrOut) {
  Declare("m1");
  Declare("m2");
  Node& m1 = Launch("m1");
  Node& m2 = Launch("m2");
  ASSERT_TRUE(WaitUntil([&] { return MeshConnected(); }));

  zmq::context_t context;
  zmq::socket_t rogue(context, zmq::socket_type::dealer);
  rogue.set(zmq::sockopt::linger, 0);
  rogue.set(zmq::sockopt::rcvtimeo, 300);
  char public_key[41];
  char secret_key[41];
  ASSERT_EQ(zmq_curve_keypair(public_key, secret_key), 0);
  switch (GetParam()) {
    case Rogue::kRandomCurveKey:
      rogue.set(zmq::sockopt::curve_serverkey, Keys("m1")->public_key);
      rogue.set(zmq::sockopt::curve_publickey, std::string(public_key));
      rogue.set(zmq::sockopt::curve_secretkey, std::string(secret_key));
      break;
    case Rogue::kNoCurve:
      break;
    case Rogue::kPeerPublicKeyWithoutItsSecret:
      rogue.set(zmq::sockopt::curve_serverkey, Keys("m1")->public_key);
      rogue.set(zmq::sockopt::curve_publickey, Keys("m2")->public_key);
      rogue.set(zmq::sockopt::curve_secretkey, std::string(secret_key));
      break;
  }
  rogue.connect(Endpoint("m1"));
  for (std::uint64_t seq = 1; seq <= 20; ++seq) {
    (void)rogue.send(zmq::buffer(EncodeDataFrame(seq, 99, 1, "publish", "evil")),
                     zmq::send_flags::dontwait);
  }
  (void)rogue.send(zmq::buffer(EncodeHeartbeatFrame({99, 1, 21})), zmq::send_flags::dontwait);
  ASSERT_TRUE(WaitUntil([&] { return m1.channel().unauthenticated_rejections() >= 1; }));

  // A real message after the refusal: it is the only thing m1's handler ever sees.
  m2.channel().Broadcast({"event", "marker"});
  ASSERT_TRUE(m1.inbox().WaitForCount("m2", 1));
  EXPECT_EQ(m1.inbox().Total(), 1u);
  EXPECT_EQ(m1.inbox().Payloads("m2"), std::vector<std::string>{"marker"});
  EXPECT_EQ(m2.inbox().Total(), 0u);
  EXPECT_EQ(m1.LinkTo("m2").received, 1u);
  zmq::message_t reply;
  EXPECT_FALSE(rogue.recv(reply).has_value()) << "the rogue got " << reply.size() << " bytes";
}

INSTANTIATE_TEST_SUITE_P(Rogues, PeerChannelRogueTest,
                         ::testing::Values(Rogue::kRandomCurveKey, Rogue::kNoCurve,
                                           Rogue::kPeerPublicKeyWithoutItsSecret));

TEST_F(PeerChannelTest, BadOptionsAreAllReported) {
  Declare("m1");
  PeerChannelOptions options = OptionsFor("m1");
  options.peers = {{"m1", "tcp://127.0.0.1:1"}, {"a/b", ""}, {"x", "tcp://x:1"}, {"x", "y"}};
  options.event_backlog_max = 0;
  options.event_backlog_max_bytes = 0;
  options.publish_queue_max = 0;
  options.link_timeout = options.heartbeat_interval;
  Declare("other");
  options.keys.public_key = Keys("other")->public_key;  // not the secret key's
  zmq::context_t context;
  transport::ZmqLoop loop("cl-bad");
  loop.Start();
  {
    PeerChannel channel(context, loop, options);
    halite::Status status = channel.Start();
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    for (const char* want :
         {"is this master", "'a/b'", "no endpoint", "listed twice", "event_backlog_max ",
          "event_backlog_max_bytes", "publish_queue_max", "link_timeout", "key pair"}) {
      EXPECT_NE(status.error().message.find(want), std::string::npos) << want;
    }
  }
  loop.Stop();
}

TEST_F(PeerChannelTest, StartFailsWhenThePortIsTakenOrTheContextHasAZapHandler) {
  Declare("m1");
  Declare("m2");
  Launch("m1");
  {
    PeerChannelOptions options = OptionsFor("m2");
    options.bind_endpoint = Endpoint("m1");
    Node clash(options);
    halite::Status status = clash.Start();
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::kUnavailable);
  }
  zmq::context_t context;
  transport::ZmqLoop loop("cl-zap");
  loop.Start();
  {
    PeerChannel first(context, loop, OptionsFor("m2"));
    ASSERT_TRUE(first.Start().ok());
    PeerChannelOptions options = OptionsFor("m2");
    options.bind_endpoint = "tcp://" + subnet_ + "9:4520";
    PeerChannel second(context, loop, options);
    halite::Status status = second.Start();
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::kFailedPrecondition);
    EXPECT_NE(status.error().message.find("ZAP"), std::string::npos);
  }
  loop.Stop();
}

// Publish forwarding over the channel: a publish goes once to every peer; the receiving
// master delivers each jid once however often it arrives (a resend, or a jid it published
// itself from the job cache), and drops a forward older than max_age.
TEST_F(PeerChannelTest, ForwardedPublishesAreDeliveredOnceAndStaleOnesDropped) {
  for (const char* id : {"m1", "m2"}) Declare(id);
  Launch("m1");
  Launch("m2");
  ASSERT_TRUE(WaitUntil([&] { return MeshConnected(); }));
  RecentSet sent_jids(100), received_jids(100);
  std::vector<std::string> delivered;
  PublishForwarder m1(node("m1").channel(), sent_jids, [](const std::string&, const wire::Value&) {
    ADD_FAILURE() << "m1 received a publish";
  });
  PublishForwarder m2(node("m2").channel(), received_jids,
                      [&](const std::string& jid, const wire::Value& load) {
                        EXPECT_EQ(load.FindStr("jid") ? *load.FindStr("jid") : "", jid);
                        delivered.push_back(jid);
                      });
  for (const char* jid : {"20261205000000000001", "20261205000000000002"}) {
    ASSERT_TRUE(m1.Forward(wire::Value::MapOf({{"jid", jid}, {"fun", "test.ping"}})).ok());
  }
  EXPECT_TRUE(sent_jids.Contains("20261205000000000001"));  // its own: never published twice
  ASSERT_TRUE(node("m2").inbox().WaitForCount("m1", 2));
  std::vector<PeerMessage> got = node("m2").inbox().Messages("m1");
  ASSERT_EQ(got.size(), 2u);
  for (const PeerMessage& message : got) EXPECT_EQ(message.kind, "publish");
  // Each delivered once, however often it comes; one the job cache scan published here
  // already is not delivered again.
  received_jids.Insert("20261205000000000002");
  for (int round = 0; round < 2; ++round) {
    for (const PeerMessage& message : got) m2.OnPeerPublish("m1", message.payload);
  }
  EXPECT_EQ(delivered, std::vector<std::string>{"20261205000000000001"});
  EXPECT_EQ(m2.forwarded(), 1u);
  // Too old, malformed: dropped, and the stale one counted.
  const auto old = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count() -
                   121;
  m2.OnPeerPublish(
      "m1", wire::Pack(wire::Value::MapOf(
                           {{"ts", static_cast<long long>(old)},  // NOLINT
                            {"load", wire::Value::MapOf({{"jid", "20261205000000000003"}})}}),
                       wire::Packing::kBinType));
  m2.OnPeerPublish("m1", "not msgpack at all");
  m2.OnPeerPublish("m1", wire::Pack(wire::Value::MapOf({{"ts", 1}}), wire::Packing::kBinType));
  EXPECT_EQ(m2.stale_dropped(), 1u);
  EXPECT_EQ(delivered.size(), 1u);
}

}  // namespace
}  // namespace halite::cluster
