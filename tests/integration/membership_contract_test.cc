// The Membership contract (cluster/membership.h) run against both backends: the files of a
// shared folder (the configured masters, fixed) and a real etcd (registration under a lease).
// What both promise: every member sees the others and itself, sorted; the listener hears of
// every peer; a member's trees reach the others; no problem while the backend answers; Stop
// is clean. Joins and leaves at runtime are etcd's alone (etcd_membership_test.cc).
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "etcd_server.h"
#include "halite/cluster/curve_keys.h"
#include "halite/cluster/membership.h"
#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class MembershipContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "etcd") {
      ASSERT_NE(SharedEtcd(), nullptr) << "etcd did not start";
    }
    static int n = 0;
    prefix_ = "/membership" + std::to_string(++n) + "-" + std::to_string(::getpid()) + "/";
  }

  cluster::MemberRecord Record(const std::string& name) {
    auto keys =
        cluster::LoadOrCreateCurveKeys(tmp_.path() / ("pki-" + name), tmp_.path() / "pki", name);
    EXPECT_TRUE(keys.ok()) << keys.error().ToString();
    cluster::MemberRecord r;
    r.name = name;
    r.address = "127.0.0.1";
    r.peer_port = 4520;
    r.publish_port = 4505;
    r.ret_port = 4506;
    r.health_port = 4510;
    r.curve_public_key = keys.ok() ? keys->public_key : "";
    r.version = "test";
    return r;
  }

  // Member `name` of the cluster {names}, started with a listener that records who it hears of.
  cluster::Membership& Add(const std::string& name, const std::vector<std::string>& names) {
    std::unique_ptr<cluster::Membership> m;
    if (GetParam() == "etcd") {
      auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
      EXPECT_TRUE(client.ok());
      cluster::EtcdMembershipOptions options;
      options.self = Record(name);
      options.prefix = prefix_;
      options.poll_interval = poll_;
      options.resync_interval = poll_;
      m = cluster::MakeEtcdMembership(std::move(options), std::move(client).value());
    } else {
      std::vector<std::string> peers;
      for (const auto& other : names) {
        if (other != name) peers.push_back(other);
      }
      m = cluster::MakeFileMembership({Record(name), tmp_.path() / "members", peers, 100ms});
    }
    m->SetLeaveHandler([this, name](const cluster::LeaveRequest& request) {
      std::lock_guard lock(mu_);
      asked_to_leave_[name] = request.requested_by;
    });
    Status started = m->Start([this, name](const std::vector<cluster::MemberRecord>& changed,
                                           const std::vector<std::string>& left) {
      std::lock_guard lock(mu_);
      for (const auto& r : changed) heard_[name].insert(r.name);
      for (const auto& n : left) heard_left_[name].insert(n);
    });
    EXPECT_TRUE(started.ok()) << started.error().ToString();
    members_.push_back(std::move(m));
    return *members_.back();
  }

  static std::vector<std::string> Names(const cluster::Membership& m) {
    std::vector<std::string> names;
    for (const auto& r : m.Members()) names.push_back(r.name);
    return names;
  }
  std::set<std::string> Heard(const std::string& name) {
    std::lock_guard lock(mu_);
    return heard_[name];
  }
  std::set<std::string> HeardLeft(const std::string& name) {
    std::lock_guard lock(mu_);
    return heard_left_[name];
  }
  std::string AskedToLeaveBy(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = asked_to_leave_.find(name);
    return it == asked_to_leave_.end() ? "" : it->second;
  }

  TempDir tmp_;
  std::string prefix_;
  std::mutex mu_;
  std::map<std::string, std::set<std::string>> heard_;       // guarded by mu_
  std::map<std::string, std::set<std::string>> heard_left_;  // guarded by mu_
  std::map<std::string, std::string> asked_to_leave_;        // guarded by mu_
  std::chrono::milliseconds poll_ = 100ms;  // etcd: poll_interval and resync_interval
  std::vector<std::unique_ptr<cluster::Membership>> members_;
};

TEST_P(MembershipContractTest, EveryMemberSeesTheOthersAndItselfAndHearsOfItsPeers) {
  const std::vector<std::string> names = {"m1", "m2", "m3"};
  for (const auto& name : names) Add(name, names);
  for (std::size_t i = 0; i < members_.size(); ++i) {
    EXPECT_TRUE(WaitFor(
        [&] {
          auto members = members_[i]->Members();
          if (members.size() != 3) return false;
          // Every record is the member's own, with its key (sorted by name).
          for (std::size_t k = 0; k < 3; ++k) {
            if (members[k].name != names[k] || members[k].curve_public_key.empty()) return false;
          }
          return true;
        },
        10s))
        << names[i];
    std::set<std::string> peers(names.begin(), names.end());
    peers.erase(names[i]);
    EXPECT_TRUE(WaitFor([&] { return Heard(names[i]) == peers; }, 10s)) << names[i];
    EXPECT_EQ(members_[i]->problem(), "");
    EXPECT_FALSE(members_[i]->left());
  }
}

TEST_P(MembershipContractTest, AMembersTreesReachTheOthers) {
  const std::vector<std::string> names = {"m1", "m2"};
  auto& m1 = Add("m1", names);
  auto& m2 = Add("m2", names);
  const std::map<std::string, std::string> trees = {{"file_roots/base", "0123456789abcdef"}};
  m1.SetTrees(trees);
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& r : m2.Members()) {
          if (r.name == "m1") return r.trees == trees;
        }
        return false;
      },
      10s));
  // Its own record carries them at once.
  for (const auto& r : m1.Members()) {
    if (r.name == "m1") {
      EXPECT_EQ(r.trees, trees);
    }
  }
}

TEST_P(MembershipContractTest, StopIsCleanAndTwiceIsFine) {
  auto& m1 = Add("m1", {"m1"});
  EXPECT_TRUE(WaitFor([&] { return Names(m1) == std::vector<std::string>{"m1"}; }, 10s));
  m1.Stop();
  m1.Stop();
  EXPECT_EQ(m1.problem(), "");
}

INSTANTIATE_TEST_SUITE_P(Backends, MembershipContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// etcd members follow the list through /v3/watch, not by reading it: with the poll and the
// resync a minute apart, a join, a leave request and a leave still arrive within seconds.
class EtcdMembershipWatchTest : public MembershipContractTest {};

TEST_P(EtcdMembershipWatchTest, JoinsLeaveRequestsAndLeavesArriveThroughTheWatch) {
  poll_ = 60s;
  auto& m1 = Add("m1", {"m1", "m2"});
  ASSERT_TRUE(WaitFor([&] { return Names(m1) == std::vector<std::string>{"m1"}; }, 10s));
  auto& m2 = Add("m2", {"m1", "m2"});
  EXPECT_TRUE(WaitFor([&] { return Heard("m1") == std::set<std::string>{"m2"}; }, 5s));

  auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
  ASSERT_TRUE(client.ok());
  cluster::LeaveRequest request;
  request.requested_by = "the-test";
  ASSERT_TRUE(cluster::RequestLeave(**client, prefix_, "m1", request).ok());
  EXPECT_TRUE(WaitFor([&] { return AskedToLeaveBy("m1") == "the-test"; }, 5s));
  EXPECT_EQ(AskedToLeaveBy("m2"), "");

  m2.Stop();  // revokes its lease: its record goes at once
  EXPECT_TRUE(WaitFor([&] { return HeardLeft("m1") == std::set<std::string>{"m2"}; }, 5s));
  EXPECT_EQ(Names(m1), std::vector<std::string>{"m1"});
  EXPECT_EQ(m1.problem(), "");
}

INSTANTIATE_TEST_SUITE_P(Backends, EtcdMembershipWatchTest, ::testing::Values("etcd"),
                         [](const auto& info) { return info.param; });

// The files backend has no live leave: it says what to do instead.
TEST(FileMembershipTest, LeaveSaysToEditClusterPeers) {
  TempDir tmp;
  auto m = cluster::MakeFileMembership({cluster::MemberRecord{}, tmp.path() / "members", {}});
  Status left = m->Leave();
  ASSERT_FALSE(left.ok());
  EXPECT_EQ(left.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(left.error().message.find("cluster_peers"), std::string::npos);
}

}  // namespace
}  // namespace halite::testing
