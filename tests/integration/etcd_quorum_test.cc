// Masters on a real 3-member etcd cluster (issue 17, deliver 7): two masters started at the
// same instant on an empty prefix agree on one cluster key pair and AES key; the etcd leader
// killed in the middle of an AES rotation leaves one key on every master; etcd entirely down
// for 30 s while jobs run costs no job, and everything resumes when it is back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "etcd_server.h"
#include "halite/cluster/etcd_client.h"
#include "halite/keys/key_admin.h"
#include "harness.h"
#include "http_client.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class EtcdQuorumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdCluster::Start(3);
    ASSERT_NE(etcd_, nullptr);
  }

  // A master with its own folders (no shared_dir): all it shares is etcd.
  MasterUnderTest& NewMaster(const std::string& name, bool start = true) {
    MasterSpec spec;
    spec.id = name;
    spec.ip = UniqueLoopbackIp();
    spec.auto_accept = true;
    spec.cluster_id = "c1";
    spec.health_port = 4510;
    spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: " + etcd_->EndpointsYaml() + "\n";
    masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    if (start) masters_.back()->Start();
    return *masters_.back();
  }

  MinionUnderTest& NewMinion(const std::string& id, MasterUnderTest& master) {
    return StartMinion(tmp_.path(), id, master.ip(), minions_);
  }

  std::unique_ptr<cluster::EtcdClient> Client() {
    auto client = cluster::MakeEtcdClient({etcd_->Endpoints(), 2000ms});
    EXPECT_TRUE(client.ok());
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // The cluster's public key and AES key as etcd holds them ("" when unreadable).
  std::pair<std::string, std::string> SharedKeys() {
    auto client = Client();
    std::pair<std::string, std::string> out;
    if (!client) return out;
    if (auto kv = client->Get("/halite/cluster/keypair"); kv.ok()) {
      auto j = nlohmann::json::parse(kv->value, nullptr, false);
      if (j.is_object() && j["pub"].is_string()) out.first = j["pub"].get<std::string>();
    }
    if (auto kv = client->Get("/halite/cluster/aes"); kv.ok()) {
      auto j = nlohmann::json::parse(kv->value, nullptr, false);
      if (j.is_object() && j["key"].is_string()) out.second = j["key"].get<std::string>();
    }
    return out;
  }

  // Signs a raw minion in on `master`, checking the reply's signature with `pub`; the AES key
  // it was given, or "" (with the reason in `why`).
  std::string AesFrom(MasterUnderTest& master, const std::string& pub, std::string* why) {
    auto key = wire::RsaPublicKey::FromPem(pub);
    if (!key.ok()) {
      *why = "no cluster key in etcd";
      return "";
    }
    RawMinion raw("probe", probe_key_, RetEndpoint(master));
    auto auth = raw.Auth(ctx_, *key);
    if (!auth.ok() || !auth->signature_ok || !auth->aes) {
      *why = master.id() + ": " + (auth.ok() ? auth->inner.ToJson() : auth.error().ToString());
      return "";
    }
    return auth->aes->key_string();
  }

  std::unique_ptr<EtcdCluster> etcd_;
  TempDir tmp_;
  zmq::context_t ctx_;
  wire::RsaPrivateKey probe_key_ = NewKey();
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

TEST_F(EtcdQuorumTest, TwoMastersStartedAtTheSameInstantAgreeOnOneClusterKey) {
  MasterUnderTest& m1 = NewMaster("m1", false);
  MasterUnderTest& m2 = NewMaster("m2", false);
  m1.StartAsync();
  m2.StartAsync();
  m1.WaitReady();
  m2.WaitReady();
  const auto [pub, aes] = SharedKeys();
  ASSERT_FALSE(pub.empty());
  ASSERT_FALSE(aes.empty());
  std::string why;
  // Both sign with the pair in etcd and hand out its AES key.
  EXPECT_EQ(AesFrom(m1, pub, &why), aes) << why;
  EXPECT_EQ(AesFrom(m2, pub, &why), aes) << why;
}

TEST_F(EtcdQuorumTest, TheEtcdLeaderKilledMidRotationLeavesOneKeyOnEveryMaster) {
  MasterUnderTest& m1 = NewMaster("m1");
  MasterUnderTest& m2 = NewMaster("m2");
  MasterUnderTest& m3 = NewMaster("m3");
  NewMinion("web1", m1);
  NewMinion("web2", m2);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(m3, "web*", {"test.ping"}, 2, &last)) << last;
  const std::string before = SharedKeys().second;
  const int leader = etcd_->Leader();
  ASSERT_GE(leader, 0) << "no etcd leader";
  // The operator asks m1 to rotate (what halite-key does on a key deletion); the leader dies
  // as m1's maintenance loop (every second here) goes for the compare-and-swap.
  ASSERT_TRUE(keys::WriteDropFile(m1.dir() / "cache", "m1").ok());
  etcd_->member(static_cast<std::size_t>(leader)).Kill();
  // The two members left elect a leader; whether the rotation landed or failed (then m1
  // logged it and the operator writes the drop file again), every master ends on the key etcd
  // holds, and the minions answer.
  ASSERT_TRUE(WaitFor([&] { return etcd_->Leader() >= 0; }, 30s, 200ms)) << "no new leader";
  if (SharedKeys().second == before) {
    ASSERT_TRUE(
        WaitFor([&] { return !std::filesystem::exists(m1.dir() / "cache" / ".dfn"); }, 30s, 200ms));
    if (SharedKeys().second == before) {
      ASSERT_TRUE(keys::WriteDropFile(m1.dir() / "cache", "m1").ok());
    }
  }
  ASSERT_TRUE(WaitFor([&] { return SharedKeys().second != before; }, 30s, 200ms))
      << "the rotation never happened";
  const std::string after = SharedKeys().second;
  for (MasterUnderTest* m : {&m1, &m2, &m3}) {
    std::string why;
    ASSERT_TRUE(WaitFor([&] { return AesFrom(*m, SharedKeys().first, &why) == after; }, 30s, 500ms))
        << m->id() << " does not hand out etcd's key: " << why;
  }
  ASSERT_TRUE(EveryMinionAnswers(m3, "web*", {"test.ping"}, 2, &last)) << last;
}

TEST_F(EtcdQuorumTest, EtcdEntirelyDownFor30SecondsWhileJobsRunLosesNoJob) {
  MasterUnderTest& m1 = NewMaster("m1");
  MasterUnderTest& m2 = NewMaster("m2");
  NewMinion("web1", m1);
  NewMinion("web2", m2);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(m1, "web*", {"test.ping"}, 2, &last)) << last;
  for (std::size_t i = 0; i < etcd_->size(); ++i) etcd_->member(i).Stop();
  const auto down_at = std::chrono::steady_clock::now();
  // Jobs keep running on both masters for the whole outage, each answered by both minions.
  int jobs = 0;
  while (std::chrono::steady_clock::now() - down_at < 30s) {
    MasterUnderTest& on = jobs % 2 == 0 ? m1 : m2;
    auto job = on.Cli("halite", {"--out", "txt", "-t", "10", "web*", "test.echo",
                                 "outage-" + std::to_string(jobs)});
    EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
    const std::string want = "outage-" + std::to_string(jobs);
    // In the order the returns arrived.
    EXPECT_TRUE(job.out == "web1: " + want + "\nweb2: " + want + "\n" ||
                job.out == "web2: " + want + "\nweb1: " + want + "\n")
        << on.id() << ": " << job.out;
    ++jobs;
    // /health stays 200 and, once the membership thread has tried etcd, says what is wrong.
    auto health = HttpCall(on.ip(), 4510, "GET", "/health", {}, "", 5s);
    EXPECT_EQ(health.status, 200) << health.body;
    if (std::chrono::steady_clock::now() - down_at > 5s) {
      EXPECT_NE(health.body.find("coordination unavailable"), std::string::npos) << health.body;
    }
  }
  EXPECT_GE(jobs, 3);
  // A minion whose master goes away moves to the other one and signs in there, etcd or not
  // (its key is in m2's copy; its session becomes m2's own until etcd is back).
  minions_[0]->MoveTo(m2.ip());  // web1
  ASSERT_TRUE(EveryMinionAnswers(m2, "web*", {"test.ping"}, 2, &last)) << last;
  for (std::size_t i = 0; i < etcd_->size(); ++i) etcd_->member(i).Spawn();
  ASSERT_TRUE(WaitFor([&] { return etcd_->Leader() >= 0; }, 60s, 500ms));
  // Back: the masters say so, and what needs etcd works again (a new minion's key).
  for (MasterUnderTest* m : {&m1, &m2}) {
    ASSERT_TRUE(WaitFor(
        [&] {
          auto health = HttpCall(m->ip(), 4510, "GET", "/health", {}, "", 5s);
          last = health.body;
          return health.status == 200 &&
                 health.body.find("coordination unavailable") == std::string::npos;
        },
        30s, 500ms))
        << m->id() << ": " << last;
  }
  NewMinion("web3", m2);
  ASSERT_TRUE(EveryMinionAnswers(m1, "web*", {"test.ping"}, 3, &last)) << last;
}

}  // namespace
}  // namespace halite::testing
