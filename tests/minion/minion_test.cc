#include "halite/minion/minion.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <mutex>
#include <set>

#include "fake_master.h"
#include "halite/minion/grains.h"
#include "test_util.h"

namespace halite::minion {
namespace {

using namespace std::chrono_literals;
using testing::FakeMaster;
using testing::OnLoop;
using wire::Value;

Value Job(std::string jid, std::string fun, wire::Array args = {}, Value tgt = "minion1",
          std::string tgt_type = "glob") {
  return Value::MapOf({{"fun", fun},
                       {"arg", Value(std::move(args))},
                       {"tgt", std::move(tgt)},
                       {"jid", jid},
                       {"ret", ""},
                       {"tgt_type", tgt_type},
                       {"user", "root"}});
}

std::function<bool(const FakeMaster::Seen&)> ReturnFor(std::string jid, int count = 1) {
  return [jid, count](const FakeMaster::Seen& s) {
    return FakeMaster::CountLoads(s, "_return", "jid", jid) >= count;
  };
}

// What a ledger would get, read by the test thread while the loop writes.
class RecordingJournal final : public JobJournal {
 public:
  void JobStarted(std::string_view minion, std::string_view jid, std::string_view fun) override {
    Add("run " + std::string(minion) + " " + std::string(jid) + " " + std::string(fun));
  }
  void ReturnAcknowledged(std::string_view minion, std::string_view jid) override {
    Add("ack " + std::string(minion) + " " + std::string(jid));
  }
  void PublisherConnection(std::string_view minion, bool up) override {
    Add((up ? "up " : "down ") + std::string(minion));
  }
  int Count(const std::string& record) const {
    std::lock_guard lock(mu_);
    return static_cast<int>(std::count(records_.begin(), records_.end(), record));
  }
  std::vector<std::string> Records() const {
    std::lock_guard lock(mu_);
    return records_;
  }

 private:
  void Add(std::string record) {
    std::lock_guard lock(mu_);
    records_.push_back(std::move(record));
  }
  mutable std::mutex mu_;
  std::vector<std::string> records_;
};

class MinionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_.Start();
    env_.context = &context_;
    env_.crypto_pool = &crypto_;
    env_.exec_pool = &exec_;
    env_.functions = std::make_shared<const FunctionTable>(BuiltinFunctions());
    GrainSources sources;
    sources.read_interfaces = false;
    env_.system_grains = std::make_shared<const Value>(SystemGrains(sources));
    env_.metrics = &metrics_;
  }
  void TearDown() override {
    std::ofstream(dir_.path() / "gate").put('\n');  // lets a gated job end if a test failed
    OnLoop(loop_, [&] {
      for (auto& m : minions_) m->Stop();
      minions_.clear();
    });
    crypto_.Shutdown();
    exec_.Shutdown();
    loop_.Stop();
  }

  MinionOptions Options(const std::string& id = "minion1", bool vector_key = true) {
    MinionOptions o;
    o.id = id;
    o.master_ip = "127.0.0.1";
    o.master_port = master_.ret_port();
    o.pki_dir = dir_.path() / id;
    if (vector_key) {
      std::filesystem::create_directories(o.pki_dir);
      std::filesystem::copy_file(testing::VectorPath("key_minion.pem"), o.pki_dir / "minion.pem",
                                 std::filesystem::copy_options::overwrite_existing);
    }
    o.acceptance_wait_time = 100ms;
    o.acceptance_wait_time_max = 400ms;
    o.auth_timeout = 3s;
    o.auth_tries = 3;
    o.request_timeout = 3s;
    o.request_tries = 3;
    o.return_retry_timer = 2s;
    o.return_retry_timer_max = 3s;
    o.recon_default = 100ms;
    o.recon_max = 200ms;
    o.grains = Value::MapOf({{"role", "test"}});
    return o;
  }

  std::shared_ptr<Minion> StartMinion(MinionOptions options) {
    return OnLoop(loop_, [&] {
      auto m = Minion::Create(loop_, env_, std::move(options));
      EXPECT_TRUE(m.ok()) << m.error().ToString();
      minions_.push_back(*m);
      (*m)->Start();
      return *m;
    });
  }

  Minion::State StateOf(const std::shared_ptr<Minion>& m) {
    return OnLoop(loop_, [&] { return m->state(); });
  }

  testing::TempDir dir_;
  zmq::context_t context_;
  FakeMaster master_{context_};
  transport::ZmqLoop loop_{"minion-test"};
  transport::WorkerPool crypto_{"crypto", 1};
  transport::WorkerPool exec_{"exec", 2};
  MinionMetrics metrics_;
  RecordingJournal journal_;
  MinionEnv env_;
  std::vector<std::shared_ptr<Minion>> minions_;
};

TEST_F(MinionTest, SignsInFetchesPillarFiresStartEventsAndAnswersAPing) {
  auto minion = StartMinion(Options());
  ASSERT_TRUE(master_.WaitFor([](const FakeMaster::Seen& s) {
    return FakeMaster::CountLoads(s, "_minion_event", "tag", "salt/minion/minion1/start") == 1;
  }));
  FakeMaster::Seen seen = master_.seen();
  // Order: _auth, _pillar, minion_start, salt/minion/<id>/start.
  ASSERT_GE(seen.loads.size(), 4u);
  EXPECT_EQ(*seen.loads[0].FindStr("cmd"), "_auth");
  EXPECT_EQ(*seen.loads[1].FindStr("cmd"), "_pillar");
  EXPECT_EQ(*seen.loads[2].FindStr("tag"), "minion_start");
  EXPECT_EQ(*seen.loads[3].FindStr("tag"), "salt/minion/minion1/start");
  EXPECT_EQ(seen.loads[0].Find("token"), nullptr);  // first contact
  const Value& pillar_load = seen.loads[1];
  EXPECT_EQ(*pillar_load.Find("grains")->FindStr("id"), "minion1");
  EXPECT_EQ(*pillar_load.Find("grains")->FindStr("role"), "test");
  EXPECT_EQ(seen.versions[1], 3);
  EXPECT_EQ(seen.loads[3].FindStr("data")->rfind("Minion minion1 started at ", 0), 0u);
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(*seen.loads[i].FindStr("id"), "minion1");
    EXPECT_NE(seen.loads[i].Find("tok"), nullptr);
    EXPECT_NE(seen.loads[i].Find("ts"), nullptr);
  }
  EXPECT_EQ(StateOf(minion), Minion::State::kConnected);
  EXPECT_EQ(testing::Wire(OnLoop(loop_, [&] { return minion->pillar(); })),
            testing::Wire(Value::MapOf({{"foo", "bar"}})));
  EXPECT_EQ(testing::ReadTestFile((dir_.path() / "minion1" / "minion_master.pub").string()),
            master_.master_pub());

  ASSERT_TRUE(master_.PublishUntil(Job("20250101120000000001", "test.ping"),
                                   ReturnFor("20250101120000000001")));
  seen = master_.seen();
  const Value* ret = FakeMaster::FindLoad(seen, "_return", "jid", "20250101120000000001");
  ASSERT_NE(ret, nullptr);
  EXPECT_EQ(ret->Find("return")->boolean(), true);
  EXPECT_EQ(ret->Find("success")->boolean(), true);
  EXPECT_EQ(ret->Find("retcode")->int64(), 0);
  EXPECT_EQ(*ret->FindStr("fun"), "test.ping");
  EXPECT_EQ(*ret->FindStr("id"), "minion1");
  EXPECT_EQ(*ret->FindStr("user"), "root");
  EXPECT_TRUE(ret->Find("fun_args")->is_array());
  EXPECT_EQ(metrics_.connected.load(), 1);
  EXPECT_GE(metrics_.jobs_seen.load(), 1u);
  EXPECT_TRUE(testing::WaitFor([&] { return metrics_.returns_sent.load() >= 1; }));
}

TEST_F(MinionTest, IgnoresOtherTargetsAndReportsUnknownFunctions) {
  StartMinion(Options());
  // Subscribed: a job for this minion is answered.
  ASSERT_TRUE(master_.PublishUntil(Job("0", "test.ping"), ReturnFor("0")));
  // Then the job for someone else goes out once, ahead of the next one on the same PUB
  // socket: when the next job's return arrives, the first was delivered and handled (both run
  // on the loop in arrival order and returns leave in order).
  master_.Publish(Job("1", "test.ping", {}, "web*"));
  ASSERT_TRUE(master_.PublishUntil(Job("2", "nope.fn", {}, "L@minion1 and G@role:test", "compound"),
                                   ReturnFor("2")));
  FakeMaster::Seen seen = master_.seen();
  EXPECT_EQ(FakeMaster::CountLoads(seen, "_return", "jid", "1"), 0);
  const Value* ret = FakeMaster::FindLoad(seen, "_return", "jid", "2");
  EXPECT_EQ(*ret->FindStr("return"), "'nope.fn' is not available.");
  EXPECT_EQ(ret->Find("success")->boolean(), false);
  EXPECT_EQ(ret->Find("retcode")->int64(), 1);
  EXPECT_EQ(*ret->FindStr("out"), "nested");
}

TEST_F(MinionTest, PillarTargetsMatchTheFetchedPillar) {
  // The fake master's pillar is {foo: bar}: I@ and `pillar` targets match it, others do not.
  StartMinion(Options());
  ASSERT_TRUE(
      master_.PublishUntil(Job("10", "test.ping", {}, "foo:bar", "pillar"), ReturnFor("10")));
  master_.Publish(Job("11", "test.ping", {}, "I@foo:baz", "compound"));
  ASSERT_TRUE(master_.PublishUntil(Job("12", "test.ping", {}, "I@foo:b* and minion1", "compound"),
                                   ReturnFor("12")));
  EXPECT_EQ(FakeMaster::CountLoads(master_.seen(), "_return", "jid", "11"), 0);
}

TEST_F(MinionTest, SurvivesAMasterRestartAndASessionKeyChange) {
  MinionOptions o = Options();
  o.random_reauth_delay = 200ms;
  StartMinion(std::move(o));
  ASSERT_TRUE(master_.PublishUntil(Job("1", "test.ping"), ReturnFor("1")));
  int auths = master_.seen().auths;
  EXPECT_EQ(auths, 1);

  // New AES key (a restarted master): the next publish fails its HMAC -> re-auth -> decrypt.
  master_.RotateAes();
  ASSERT_TRUE(master_.PublishUntil(Job("2", "test.echo", {"hello"}), ReturnFor("2")));
  FakeMaster::Seen seen = master_.seen();
  EXPECT_GT(seen.auths, auths);
  EXPECT_EQ(*FakeMaster::FindLoad(seen, "_return", "jid", "2")->FindStr("return"), "hello");
  // The second sign-in carried the token: the master key was pinned by the first.
  const Value* last_auth = nullptr;
  for (const Value& l : seen.loads) {
    if (*l.FindStr("cmd") == "_auth") last_auth = &l;
  }
  ASSERT_NE(last_auth, nullptr);
  EXPECT_NE(last_auth->Find("token"), nullptr);

  // New session key: the return gets "bad load" -> re-auth -> resent once.
  auths = seen.auths;
  master_.RotateSession();
  ASSERT_TRUE(master_.PublishUntil(Job("3", "test.ping"), ReturnFor("3")));
  seen = master_.seen();
  EXPECT_GT(seen.auths, auths);
  EXPECT_GE(seen.bad_loads, 1);
  EXPECT_GE(metrics_.reauths.load(), 2u);
}

TEST_F(MinionTest, AJobPastItsTimeoutIsKilledAndReported) {
  MinionOptions o = Options();
  o.job_timeout = 1s;
  StartMinion(std::move(o));
  std::string pid_file = (dir_.path() / "job.pid").string();
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(master_.PublishUntil(
      Job("1", "cmd.run", {"echo $$ > " + pid_file + "; exec sleep 30"}), ReturnFor("1")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  FakeMaster::Seen seen = master_.seen();
  const Value* ret = FakeMaster::FindLoad(seen, "_return", "jid", "1");
  EXPECT_NE(ret->FindStr("return")->find("Timed out after 1 seconds"), std::string::npos);
  EXPECT_EQ(ret->Find("retcode")->int64(), 1);
  EXPECT_EQ(ret->Find("success")->boolean(), false);
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(testing::WaitFor([&] { return kill(pid, 0) != 0; }));
}

TEST_F(MinionTest, RunsCommandsAndSleepsOffTheLoopAndFindsRunningJobs) {
  StartMinion(Options());
  ASSERT_TRUE(
      master_.PublishUntil(Job("1", "cmd.run", {"echo hi; echo there >&2"}), ReturnFor("1")));
  FakeMaster::Seen seen = master_.seen();
  EXPECT_EQ(*FakeMaster::FindLoad(seen, "_return", "jid", "1")->FindStr("return"), "hi\nthere");
  // test.sleep runs as a timer: while it waits (an hour: it never ends within the test),
  // find_job sees it and pings still answer.
  master_.Publish(Job("2", "test.sleep", {"3600"}));
  ASSERT_TRUE(master_.PublishUntil(Job("3", "saltutil.find_job", {"2"}), ReturnFor("3")));
  seen = master_.seen();
  const Value* found = FakeMaster::FindLoad(seen, "_return", "jid", "3");
  ASSERT_TRUE(found->Find("return")->is_map());
  ASSERT_FALSE(found->Find("return")->map()->empty());
  EXPECT_EQ(*found->Find("return")->FindStr("fun"), "test.sleep");
  EXPECT_NE(found->Find("return")->Find("pid"), nullptr);
  // A command runs off the loop: it waits on a gate the test opens, and meanwhile the loop
  // answers find_job and pings; its return comes only after the gate opens.
  const std::string gate = (dir_.path() / "gate").string();
  master_.Publish(
      Job("5", "cmd.run", {"while [ ! -e " + gate + " ]; do sleep 0.05; done; echo out"}));
  ASSERT_TRUE(
      master_.PublishUntil(Job("6", "saltutil.find_job", {"5"}), [](const FakeMaster::Seen& s) {
        const Value* r = FakeMaster::FindLoad(s, "_return", "jid", "6");
        return r != nullptr && r->Find("return")->is_map() && !r->Find("return")->map()->empty();
      }));
  seen = master_.seen();
  EXPECT_EQ(*FakeMaster::FindLoad(seen, "_return", "jid", "6")->Find("return")->FindStr("fun"),
            "cmd.run");
  ASSERT_TRUE(master_.PublishUntil(Job("7", "test.ping"), ReturnFor("7")));
  seen = master_.seen();
  EXPECT_EQ(FakeMaster::CountLoads(seen, "_return", "jid", "2"), 0);
  EXPECT_EQ(FakeMaster::CountLoads(seen, "_return", "jid", "5"), 0);
  std::ofstream(gate).put('\n');
  ASSERT_TRUE(master_.WaitFor(ReturnFor("5")));
  EXPECT_EQ(*FakeMaster::FindLoad(master_.seen(), "_return", "jid", "5")->FindStr("return"), "out");
  ASSERT_TRUE(master_.PublishUntil(Job("4", "grains.item", {"role", "id"}), ReturnFor("4")));
  seen = master_.seen();
  EXPECT_EQ(testing::Wire(*FakeMaster::FindLoad(seen, "_return", "jid", "4")->Find("return")),
            testing::Wire(Value::MapOf({{"role", "test"}, {"id", "minion1"}})));
}

TEST_F(MinionTest, PendingKeyRetriesWithBackoffUntilAccepted) {
  master_.SetMode(FakeMaster::Mode::kPending);
  auto minion = StartMinion(Options());
  ASSERT_TRUE(master_.WaitFor([](const FakeMaster::Seen& s) { return s.auths >= 3; }));
  EXPECT_EQ(StateOf(minion), Minion::State::kPending);
  EXPECT_EQ(metrics_.pending.load(), 1);
  master_.SetMode(FakeMaster::Mode::kAccept);
  ASSERT_TRUE(testing::WaitFor([&] { return StateOf(minion) == Minion::State::kConnected; }));
  EXPECT_EQ(metrics_.pending.load(), 0);
  EXPECT_EQ(metrics_.connected.load(), 1);
  ASSERT_TRUE(master_.PublishUntil(Job("1", "test.ping"), ReturnFor("1")));
}

TEST_F(MinionTest, RejectedKeyStopsTheMinion) {
  master_.SetMode(FakeMaster::Mode::kReject);
  auto minion = StartMinion(Options());
  ASSERT_TRUE(testing::WaitFor([&] { return StateOf(minion) == Minion::State::kRejected; }));
  EXPECT_EQ(metrics_.rejected.load(), 1);
  EXPECT_EQ(master_.seen().auths, 1);
}

TEST_F(MinionTest, AChangedMasterKeyIsRefused) {
  MinionOptions o = Options();
  std::string other = wire::CleanKey(
      wire::RsaPrivateKey::FromPem(testing::ReadTestFile(testing::VectorPath("key_peer2.pem")))
          .value()
          .PublicKey()
          .ToPem());
  std::ofstream(o.pki_dir / "minion_master.pub") << other;
  auto minion = StartMinion(std::move(o));
  ASSERT_TRUE(testing::WaitFor([&] { return metrics_.auth_errors.load() >= 2; }));
  FakeMaster::Seen seen = master_.seen();
  EXPECT_GE(seen.auths, 2);
  EXPECT_EQ(FakeMaster::CountLoads(seen, "_pillar"), 0);
  EXPECT_EQ(StateOf(minion), Minion::State::kSigningIn);
  EXPECT_EQ(testing::ReadTestFile((dir_.path() / "minion1" / "minion_master.pub").string()), other);
}

TEST_F(MinionTest, SpeaksProtocolVersion2) {
  MinionOptions o = Options();
  o.request_protocol_version = 2;
  StartMinion(std::move(o));
  ASSERT_TRUE(master_.PublishUntil(Job("1", "test.ping"), ReturnFor("1")));
  FakeMaster::Seen seen = master_.seen();
  for (std::size_t i = 0; i < seen.loads.size(); ++i) {
    if (*seen.loads[i].FindStr("cmd") == "_auth") continue;
    EXPECT_EQ(seen.versions[i], 2);
    EXPECT_EQ(seen.loads[i].Find("ts"), nullptr);
  }
  // Signed, unlike a stock v2 minion's: a v2 master refuses an unsigned _return (issue 12).
  const Value* ret = FakeMaster::FindLoad(seen, "_return", "jid", "1");
  ASSERT_NE(ret, nullptr);
  ASSERT_NE(ret->Find("tok"), nullptr);
  EXPECT_TRUE(ret->Find("tok")->str() && !ret->Find("tok")->str()->empty());
}

TEST_F(MinionTest, ManyMinionsShareOneLoop) {
  constexpr int kCount = 12;
  for (int i = 0; i < kCount; ++i) {
    MinionOptions o = Options("m" + std::to_string(i), /*vector_key=*/false);
    o.keysize = 1024;
    o.fetch_pillar = i % 2 == 0;
    StartMinion(std::move(o));
  }
  ASSERT_TRUE(
      master_.PublishUntil(Job("1", "test.ping", {}, "m*"), ReturnFor("1", kCount), 60s, 500ms));
  EXPECT_EQ(metrics_.connected.load(), kCount);
  std::set<std::string> ids;
  FakeMaster::Seen seen = master_.seen();
  for (const Value& l : seen.loads) {
    if (*l.FindStr("cmd") == "_return") ids.insert(*l.FindStr("id"));
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kCount));
}

// Salt's minion keeps the last minion_jid_queue_hwm (100) jids it ran and drops a publish
// whose jid is among them (minion.py, _handle_decoded_payload): what makes a master's replay
// of live jobs safe. A jid pushed out of that window runs again, as with Salt.
TEST_F(MinionTest, ARepublishedJidRunsOnceUntilItLeavesTheLast100) {
  RecordingJournal& journal = journal_;  // outlives the minion (TearDown stops it)
  env_.journal = &journal;
  StartMinion(Options());
  // PublishUntil may send job 7 several times before the subscription is up; it runs once.
  ASSERT_TRUE(master_.PublishUntil(Job("7", "test.ping"), ReturnFor("7")));
  ASSERT_TRUE(testing::WaitFor([&] { return journal.Count("ack minion1 7") == 1; }));
  EXPECT_EQ(journal.Count("up minion1"), 1);
  master_.Publish(Job("7", "test.ping"));
  master_.Publish(Job("7", "test.echo", {"again"}));
  // Same socket, in order: once job 8 has returned, both copies of 7 were handled.
  ASSERT_TRUE(master_.PublishUntil(Job("8", "test.ping"), ReturnFor("8")));
  EXPECT_EQ(FakeMaster::CountLoads(master_.seen(), "_return", "jid", "7"), 1);
  EXPECT_EQ(journal.Count("run minion1 7 test.ping"), 1);
  EXPECT_EQ(journal.Count("run minion1 7 test.echo"), 0);

  // 99 more jids (8 was the 2nd): 7 is now the 101st most recent and runs again.
  for (int i = 100; i < 199; ++i) master_.Publish(Job(std::to_string(i), "test.ping"));
  ASSERT_TRUE(testing::WaitFor([&] { return journal.Count("ack minion1 198") == 1; }, 30s));
  ASSERT_TRUE(master_.PublishUntil(Job("7", "test.echo", {"again"}), ReturnFor("7", 2)));
  EXPECT_EQ(journal.Count("run minion1 7 test.echo"), 1);
}

}  // namespace
}  // namespace halite::minion
