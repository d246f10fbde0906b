// A cluster behind a real HAProxy, as operators run it (issue: HAProxy front, deliver 4).
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class HaproxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    front_ = UniqueLoopbackIp();
    for (int i = 0; i < 3; ++i) ips_.push_back(UniqueLoopbackIp());
    for (int i = 0; i < 3; ++i) {
      MasterSpec spec;
      spec.id = ips_[i];
      spec.ip = ips_[i];
      spec.auto_accept = true;
      spec.cluster_id = "c1";
      spec.shared_dir = tmp_.path() / "shared";
      spec.shared_via_link = true;
      spec.health_port = 4510;
      for (int j = 0; j < 3; ++j) {
        if (j != i) spec.cluster_peers.push_back(ips_[j]);
      }
      masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    }
    for (auto& m : masters_) m->StartAsync();
    for (auto& m : masters_) m->WaitReady();
    haproxy_ = std::make_unique<HaproxyUnderTest>(tmp_.path(), *masters_[0], front_);
    haproxy_->Start();
    for (int i = 0; i < 4; ++i) {
      MinionSpec spec;
      spec.id = "web" + std::to_string(i);
      spec.master_ip = front_;
      minions_.push_back(std::make_unique<MinionUnderTest>(tmp_.path(), spec));
      minions_.back()->Start();
    }
  }

  // `halite` on `master` until every minion answers (the cluster and HAProxy are wired).
  bool AllAnswer(MasterUnderTest& master, const std::vector<std::string>& fun, std::string* last,
                 std::chrono::seconds timeout = 90s) {
    return EveryMinionAnswers(master, "web*", fun, 4, last, timeout);
  }

  TempDir tmp_;
  std::string front_;
  std::vector<std::string> ips_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::unique_ptr<HaproxyUnderTest> haproxy_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

TEST_F(HaproxyTest, MinionsThroughHaproxyAnswerJobsFromAnyMaster) {
  std::string last;
  ASSERT_TRUE(AllAnswer(*masters_[0], {"test.ping"}, &last)) << last << haproxy_->Log();
  for (auto& master : masters_) {
    auto r = master->Cli("halite", {"--out", "txt", "web*", "test.echo", master->ip()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NE(r.out.find("web" + std::to_string(i) + ": " + master->ip()), std::string::npos)
          << r.out;
    }
  }
}

TEST_F(HaproxyTest, KillingAMasterMidJobLosesNoReturn) {
  std::string last;
  ASSERT_TRUE(AllAnswer(*masters_[0], {"test.ping"}, &last)) << last;
  // The job holds every minion until the test opens the gate: each marks that it started,
  // then waits for the gate file. So the kill below lands while all four jobs run.
  const auto started = tmp_.path() / "started";
  const auto gate = tmp_.path() / "gate";
  std::filesystem::create_directories(started);
  const std::string script = "mktemp " + started.string() +
                             "/job.XXXXXX >/dev/null; while [ ! -e " + gate.string() +
                             " ]; do sleep 0.05; done; echo done";
  auto cli = std::async(std::launch::async, [&] {
    return masters_[0]->Cli("halite", {"-t", "120", "--out", "txt", "web*", "cmd.run", script},
                            240s);
  });
  auto count_started = [&] {
    return std::distance(std::filesystem::directory_iterator(started),
                         std::filesystem::directory_iterator());
  };
  ASSERT_TRUE(WaitFor([&] { return count_started() == 4; }, 60s))
      << count_started() << " of 4 jobs started";
  // The victim is a master (not the CLI's) that holds at least one minion's publish
  // connection, so that minion must move through HAProxy to send its return.
  MasterUnderTest* victim = nullptr;
  for (int i = 1; i < 3 && victim == nullptr; ++i) {
    auto connected = Metric(ips_[i], 4510, "halite_connected_minions{master=\"" + ips_[i] + "\"}");
    if (connected.value_or(0) >= 1) victim = masters_[i].get();
  }
  ASSERT_NE(victim, nullptr) << "no minion on masters 2 and 3; HAProxy put all on master 1";
  victim->Kill();
  ASSERT_FALSE(victim->Alive());
  // The gate is shut, so no job can have finished yet: the kill landed mid-job.
  ASSERT_EQ(cli.wait_for(0s), std::future_status::timeout);
  WriteFile(gate, "");
  auto r = cli.get();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(r.out.find("web" + std::to_string(i) + ": done\n"), std::string::npos) << r.out;
  }
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;
  EXPECT_EQ(r.out.find("did not return"), std::string::npos) << r.out;
}

TEST_F(HaproxyTest, MasterThatLosesTheSharedDirIsDrainedAndNothingIsLost) {
  std::string last;
  ASSERT_TRUE(AllAnswer(*masters_[0], {"test.ping"}, &last)) << last;
  auto healthy = halite::testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w",
                                       "%{http_code}", "http://" + ips_[2] + ":4510/health"});
  EXPECT_EQ(healthy.out, "200");
  masters_[2]->BreakSharedDir();
  ASSERT_TRUE(WaitFor([&] {
    auto r = halite::testing::Run({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                   "http://" + ips_[2] + ":4510/health"});
    return r.out == "503";
  })) << "master 3 stayed healthy without its shared directory";
  // HAProxy drains master 3 (it shuts the sessions of a server marked down): wait until
  // master 3 holds no minion, so no minion is still between masters when the jobs below go.
  EXPECT_TRUE(WaitFor([&] {
    return Metric(ips_[2], 4510, "halite_connected_minions{master=\"" + ips_[2] + "\"}") == 0;
  })) << "HAProxy never moved the minions off master 3";
  // Its minions moved to the others and every job still returns.
  EXPECT_TRUE(AllAnswer(*masters_[0], {"test.echo", "moved"}, &last)) << last;
  auto job = masters_[1]->Cli("halite", {"-v", "--out", "txt", "web*", "test.echo", "after"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  std::string jid = job.out.substr(job.out.find("jid ") + 4, 20);
  auto stored = masters_[0]->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
  EXPECT_EQ(std::count(stored.out.begin(), stored.out.end(), '\n'), 4) << stored.out;
}

}  // namespace
}  // namespace halite::testing
