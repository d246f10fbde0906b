// PeerChannel peers added and removed at runtime (AddPeer/RemovePeer, as membership in etcd
// drives them): over real TCP on loopback, with no configured peers and no peers/ files.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "halite/cluster/peer_channel.h"
#include "loopback.h"

namespace halite::cluster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class Node {
 public:
  Node(const std::string& id, const std::string& ip, const fs::path& dir)
      : id_(id), endpoint_("tcp://" + ip + ":4520"), loop_("cl-" + id) {
    // Each node its own "shared" dir: nothing of the other is ever on disk where it looks.
    auto keys = LoadOrCreateCurveKeys(dir / ("pki-" + id), dir / ("shared-" + id), id);
    EXPECT_TRUE(keys.ok());
    keys_ = *keys;
    PeerChannelOptions options;
    options.self_id = id;
    options.bind_endpoint = endpoint_;
    options.cluster_pki_dir = dir / ("shared-" + id);
    options.keys = keys_;
    options.heartbeat_interval = 100ms;
    options.link_timeout = 5000ms;
    channel_ = std::make_unique<PeerChannel>(context_, loop_, std::move(options));
    channel_->SetHandler([this](const std::string& peer, PeerMessage message) {
      std::lock_guard lock(mu_);
      received_.push_back(peer + ":" + message.kind + ":" + message.payload);
      cv_.notify_all();
    });
    loop_.Start();
    EXPECT_TRUE(channel_->Start().ok());
  }
  ~Node() {
    channel_.reset();
    loop_.Stop();
  }
  PeerChannel& channel() { return *channel_; }
  PeerSpec spec() const { return {id_, endpoint_}; }
  const std::string& public_key() const { return keys_.public_key; }
  bool Connected(const std::string& peer) const {
    for (const auto& link : channel_->Status()) {
      if (link.id == peer) return link.connected;
    }
    return false;
  }
  std::vector<std::string> LinkIds() const {
    std::vector<std::string> ids;
    for (const auto& link : channel_->Status()) ids.push_back(link.id);
    return ids;
  }
  bool WaitFor(const std::string& entry) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] {
      return std::find(received_.begin(), received_.end(), entry) != received_.end();
    });
  }
  std::vector<std::string> Received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  const std::string id_;
  const std::string endpoint_;
  CurveKeyPair keys_;
  zmq::context_t context_;
  transport::ZmqLoop loop_;
  std::unique_ptr<PeerChannel> channel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> received_;
};

class PeerMembersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-members-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    subnet_ = halite::testing::LoopbackSubnet();
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  std::string subnet_;
  std::unique_ptr<Node> a_;
  std::unique_ptr<Node> b_;
};

TEST_F(PeerMembersTest, PeersAddedAtRuntimeLinkUpAndRemovedOnesGetNothing) {
  a_ = std::make_unique<Node>("a", subnet_ + "2", dir_);
  b_ = std::make_unique<Node>("b", subnet_ + "3", dir_);
  EXPECT_TRUE(a_->LinkIds().empty());

  a_->channel().AddPeer(b_->spec(), b_->public_key());
  b_->channel().AddPeer(a_->spec(), a_->public_key());
  ASSERT_TRUE(WaitUntil([&] { return a_->Connected("b") && b_->Connected("a"); }));
  a_->channel().Broadcast({"event", "one"});
  ASSERT_TRUE(a_->channel().BroadcastPublish({"publish", "job1"}).ok());
  EXPECT_TRUE(b_->WaitFor("a:event:one"));
  EXPECT_TRUE(b_->WaitFor("a:publish:job1"));

  // Removed: gone from Status() at once (posted to the loop), nothing queued for it any more.
  a_->channel().RemovePeer("b");
  ASSERT_TRUE(WaitUntil([&] { return a_->LinkIds().empty(); }));
  a_->channel().Broadcast({"event", "while-away"});
  ASSERT_TRUE(a_->channel().BroadcastPublish({"publish", "job-while-away"}).ok());

  // Added again: the link comes back and carries what is broadcast from then on only.
  a_->channel().AddPeer(b_->spec(), b_->public_key());
  ASSERT_TRUE(WaitUntil([&] { return a_->Connected("b"); }));
  a_->channel().Broadcast({"event", "back"});
  EXPECT_TRUE(b_->WaitFor("a:event:back"));
  for (const std::string& entry : b_->Received()) {
    EXPECT_EQ(entry.find("while-away"), std::string::npos) << entry;
  }
}

TEST_F(PeerMembersTest, BadPeersAreIgnored) {
  a_ = std::make_unique<Node>("a", subnet_ + "2", dir_);
  a_->channel().AddPeer({"../x", "tcp://127.0.0.1:1"}, a_->public_key());
  a_->channel().AddPeer({"a", "tcp://127.0.0.1:1"}, a_->public_key());  // itself
  a_->channel().AddPeer({"c", "tcp://127.0.0.1:1"}, "not a key");
  a_->channel().RemovePeer("nobody");
  // A last, good one: when it shows, the bad ones before it were handled (the loop is FIFO).
  b_ = std::make_unique<Node>("b", subnet_ + "3", dir_);
  a_->channel().AddPeer(b_->spec(), b_->public_key());
  ASSERT_TRUE(WaitUntil([&] { return !a_->LinkIds().empty(); }));
  EXPECT_EQ(a_->LinkIds(), std::vector<std::string>{"b"});
}

}  // namespace
}  // namespace halite::cluster
