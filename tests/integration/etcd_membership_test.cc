// Masters that find each other through a real etcd (cluster_backend: etcd, issue 17 first
// piece): no cluster_peers, ids are names; they register under a lease, see each other join
// and leave live, and a publish on one reaches the minions of the others. The shared folder
// still holds the cluster keys and .aes (not yet in etcd), but no peers/ file is read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "etcd_server.h"
#include "halite/cluster/etcd_client.h"
#include "halite/keys/key_admin.h"
#include "halite/wire/rsa.h"
#include "harness.h"
#include "raw_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class EtcdMembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdServer::Start(UniqueLoopbackIp());
    ASSERT_NE(etcd_, nullptr);
  }

  MasterUnderTest& AddMaster(const std::string& name) {
    MasterSpec spec;
    spec.id = name;
    spec.ip = UniqueLoopbackIp();
    spec.auto_accept = true;
    spec.cluster_id = "c1";
    spec.shared_dir = tmp_.path() / "shared";
    spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: [" + etcd_->endpoint() + "]\n";
    masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    masters_.back()->Start();
    return *masters_.back();
  }

  MinionUnderTest& AddMinion(const std::string& id, MasterUnderTest& master) {
    MinionSpec spec;
    spec.id = id;
    spec.master_ip = master.ip();
    minions_.push_back(std::make_unique<MinionUnderTest>(tmp_.path(), spec));
    minions_.back()->Start();
    return *minions_.back();
  }

  // `halite-run cluster.status` as JSON; {} when it fails. `took` gets how long it ran.
  static nlohmann::json Status(MasterUnderTest& master, std::chrono::milliseconds* took = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    auto r = master.Cli("halite-run", {"--out", "json", "cluster.status"}, 30s);
    if (took != nullptr) {
      *took = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
    }
    if (r.exit_code != 0) return nlohmann::json::object();
    auto status = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    return status.is_object() ? status : nlohmann::json::object();
  }

  // The names of the peers `master` has a link to, and whether each is connected.
  static std::map<std::string, bool> Links(MasterUnderTest& master) {
    std::map<std::string, bool> links;
    const nlohmann::json status = Status(master);
    if (!status.contains("peers") || !status["peers"].is_array()) return links;
    for (const auto& link : status["peers"])
      links[link.value("id", "")] = link.value("connected", false);
    return links;
  }

  // Waits until `master` has exactly the connected links `expected`.
  static bool LinksBecome(MasterUnderTest& master, const std::map<std::string, bool>& expected,
                          std::chrono::milliseconds timeout, std::string* last) {
    return WaitFor(
        [&] {
          auto links = Links(master);
          *last = nlohmann::json(links).dump();
          return links == expected;
        },
        timeout, 200ms);
  }

  std::unique_ptr<EtcdServer> etcd_;
  TempDir tmp_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

// Two masters with nothing but etcd's address and their names find each other; a third joins
// while they run and is linked by both; one that stops leaves at once (its lease is revoked,
// well before the 10 s TTL), one that is killed leaves when its lease expires.
TEST_F(EtcdMembershipTest, MastersJoinAndLeaveLiveThroughEtcd) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last << "\n" << m1.Log();
  ASSERT_TRUE(LinksBecome(m2, {{"m1", true}}, 30s, &last)) << last << "\n" << m2.Log();
  const nlohmann::json status = Status(m1);
  EXPECT_EQ(status.value("backend", ""), "etcd") << status.dump();
  EXPECT_EQ(status.value("coordination", ""), "ok") << status.dump();
  EXPECT_EQ(status["members"], nlohmann::json({"m1", "m2"})) << status.dump();

  // A publish on m1 reaches a minion of m2 (forwarded over the link etcd made), and back.
  AddMinion("alpha", m2);
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last)) << last;

  // m3 joins live: nobody is restarted or edited.
  MasterUnderTest& m3 = AddMaster("m3");
  AddMinion("beta", m3);
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}, {"m3", true}}, 30s, &last)) << last;
  ASSERT_TRUE(LinksBecome(m2, {{"m1", true}, {"m3", true}}, 30s, &last)) << last;
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 2, &last)) << last;
  auto job = m1.Cli("halite", {"--out", "txt", "*", "test.echo", "joined"});
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_NE(job.out.find("alpha: joined"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("beta: joined"), std::string::npos) << job.out;

  // A clean stop deregisters: gone from both well within the lease TTL.
  ASSERT_EQ(m3.Stop(), 0);
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 20s, &last)) << last;
  ASSERT_TRUE(LinksBecome(m2, {{"m1", true}}, 20s, &last)) << last;
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 6s) << "left by lease expiry, not revoke";
  EXPECT_EQ(Status(m1)["members"], nlohmann::json({"m1", "m2"}));

  // A killed master cannot deregister: it leaves when its lease runs out (TTL 10 s).
  m2.Kill();
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(LinksBecome(m1, {}, 30s, &last)) << last;
  EXPECT_GT(std::chrono::steady_clock::now() - killed, 5s) << "gone before its lease expired?";
}

// etcd going away is an error that cluster.status shows at once, not a hang; the links and
// minions keep working on the last known member list; everything is back when etcd is.
TEST_F(EtcdMembershipTest, EtcdDownIsAnErrorNotAHangAndMastersKeepServing) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  AddMinion("alpha", m2);
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last)) << last;

  etcd_->Stop();
  nlohmann::json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::chrono::milliseconds took{};
        status = Status(m1, &took);
        EXPECT_LT(took, 5s) << "cluster.status hung while etcd was down";
        return status.contains("coordination") && status.value("coordination", "ok") != "ok";
      },
      20s, 200ms))
      << status.dump();
  EXPECT_NE(status.value("coordination", "").find(etcd_->endpoint()), std::string::npos)
      << status.dump();
  EXPECT_NE(m1.Log().find("membership: etcd /v3/"), std::string::npos) << m1.Log();
  // The last known list stays: m2 is still linked and its minion still answers m1's jobs.
  EXPECT_EQ(Links(m1), (std::map<std::string, bool>{{"m2", true}}));
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last, 30s)) << last;
  EXPECT_TRUE(m1.Alive() && m2.Alive());

  ASSERT_TRUE(etcd_->Restart()) << etcd_->Log();
  ASSERT_TRUE(WaitFor([&] { return Status(m1).value("coordination", "") == "ok"; }, 30s, 200ms))
      << Status(m1).dump();
  EXPECT_EQ(Status(m1)["members"], nlohmann::json({"m1", "m2"}));
}

// The minion keys live in etcd (cluster::EtcdKeyStore), not in the shared folder: a minion
// that signs in on one master is pending for halite-key run against another master's config,
// accepted there, and then answers jobs from both; no key file is written anywhere.
TEST_F(EtcdMembershipTest, MinionKeysLiveInEtcdAndHaliteKeyManagesThemFromAnyMaster) {
  auto add = [&](const std::string& name) -> MasterUnderTest& {
    MasterSpec spec;
    spec.id = name;
    spec.ip = UniqueLoopbackIp();
    spec.cluster_id = "c1";
    spec.shared_dir = tmp_.path() / "shared";
    spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: [" + etcd_->endpoint() + "]\n";
    masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    masters_.back()->Start();
    return *masters_.back();
  };
  MasterUnderTest& m1 = add("m1");
  MasterUnderTest& m2 = add("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  AddMinion("alpha", m2);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto listed = m1.Cli("halite-key", {"-l", "un"});
        last = listed.out + listed.err;
        return listed.exit_code == 0 && listed.out == "Unaccepted Keys:\nalpha\n";
      },
      30s, 200ms))
      << last;
  auto accepted = m1.Cli("halite-key", {"-a", "alpha", "-y"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.out << accepted.err;
  auto listed = m2.Cli("halite-key", {"-l", "acc"});
  EXPECT_EQ(listed.out, "Accepted Keys:\nalpha\n") << listed.err;
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last, 60s)) << last;
  ASSERT_TRUE(EveryMinionAnswers(m2, "*", {"test.ping"}, 1, &last, 60s)) << last;
  // Nothing of alpha's under the shared pki dir: the keys are etcd's.
  for (const char* dir : {"minions", "minions_pre", "minions_rejected", "minions_denied"}) {
    EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "shared" / "pki" / dir / "alpha")) << dir;
  }
  // Deleted on m2, refused on m1 as well.
  auto deleted = m2.Cli("halite-key", {"-d", "alpha", "-y"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  EXPECT_EQ(m1.Cli("halite-key", {"-L"}).out.find("alpha"), std::string::npos);
}

// The cluster AES key lives in etcd (cluster/cluster_aes.h): both masters serve the same one,
// a drop file on m1 rotates it there (generation 2, by m1), m2 follows, and no .aes file is
// written in the shared folder.
TEST_F(EtcdMembershipTest, TheClusterAesKeyLivesInEtcdAndARotationReachesEveryMaster) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  zmq::context_t ctx;
  auto minion_key = *wire::RsaPrivateKey::Generate(2048);
  auto aes_on = [&](MasterUnderTest& master) -> std::optional<std::string> {
    RawMinion raw("rotor", minion_key, "tcp://" + master.ip() + ":4506");
    auto auth = raw.Auth(ctx, std::nullopt);
    if (!auth.ok() || !auth->aes) return std::nullopt;
    return auth->aes->key_string();
  };
  auto client = cluster::MakeEtcdClient({{etcd_->endpoint()}});
  ASSERT_TRUE(client.ok());
  auto in_etcd = [&]() -> nlohmann::json {
    auto kv = (*client)->Get("/halite/cluster/aes");
    return kv.ok() ? nlohmann::json::parse(kv->value, nullptr, false) : nlohmann::json();
  };
  const nlohmann::json first = in_etcd();
  ASSERT_TRUE(first.is_object()) << "no cluster AES key in etcd";
  EXPECT_EQ(first.value("generation", 0), 1);
  EXPECT_EQ(aes_on(m1), first.value("key", ""));
  EXPECT_EQ(aes_on(m2), first.value("key", ""));

  ASSERT_TRUE(keys::WriteDropFile(tmp_.path() / "shared" / "cache", "m1").ok());
  nlohmann::json rotated;
  ASSERT_TRUE(WaitFor(
      [&] {
        rotated = in_etcd();
        return rotated.value("generation", 0) == 2;
      },
      30s, 200ms))
      << rotated.dump();
  EXPECT_EQ(rotated.value("by", ""), "m1");
  EXPECT_NE(rotated.value("key", ""), first.value("key", ""));
  for (MasterUnderTest* m : {&m1, &m2}) {
    std::optional<std::string> key;
    EXPECT_TRUE(WaitFor(
        [&] {
          key = aes_on(*m);
          return key == rotated.value("key", "");
        },
        30s, 200ms))
        << m->ip() << " kept another key";
  }
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "shared" / "pki" / ".aes"));
}

}  // namespace
}  // namespace halite::testing
