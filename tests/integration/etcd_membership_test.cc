// Masters that find each other through a real etcd (cluster_backend: etcd, issue 17 first
// piece): no cluster_peers, ids are names; they register under a lease, see each other join
// and leave live, and a publish on one reaches the minions of the others. These masters still
// share a folder (the local job cache); etcd_cluster_test.cc runs a cluster with none at all.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "etcd_server.h"
#include "halite/cluster/etcd_client.h"
#include "halite/cluster/haproxy_runtime.h"
#include "halite/cluster/shared_state.h"
#include "halite/keys/fs_key_store.h"
#include "halite/keys/key_admin.h"
#include "halite/keys/master_keys.h"
#include "halite/wire/rsa.h"
#include "harness.h"
#include "http_client.h"
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

  MasterUnderTest& AddMaster(const std::string& name, bool auto_accept = true) {
    MasterSpec spec;
    spec.id = name;
    spec.ip = UniqueLoopbackIp();
    spec.auto_accept = auto_accept;
    spec.cluster_id = "c1";
    spec.shared_dir = tmp_.path() / "shared";
    spec.health_port = 4510;
    spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: [" + etcd_->endpoint() + "]\n";
    masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    masters_.back()->Start();
    return *masters_.back();
  }

  MinionUnderTest& AddMinion(const std::string& id, MasterUnderTest& master) {
    return AddMinionAt(id, master.ip());
  }

  MinionUnderTest& AddMinionAt(const std::string& id, const std::string& ip) {
    return StartMinion(tmp_.path(), id, ip, minions_);
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

  // `halite-run cluster.members` on `master` as JSON; {} when it fails.
  static nlohmann::json MembersOn(MasterUnderTest& master) {
    auto r = master.Cli("halite-run", {"--out", "json", "cluster.members"}, 30s);
    if (r.exit_code != 0) return nlohmann::json::object();
    auto members = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    return members.is_object() ? members : nlohmann::json::object();
  }

  static HttpResponse HealthOf(MasterUnderTest& master) {
    return HttpCall(master.ip(), 4510, "GET", "/health", {}, "", 5s);
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

  // HAProxy (not started yet) on its own address, configured by cluster.haproxy_config on
  // `master` with an admin socket: haproxy_front_ and haproxy_socket_.
  HaproxyUnderTest& HaproxyWithAdminSocket(MasterUnderTest& master) {
    haproxy_front_ = UniqueLoopbackIp();
    haproxy_socket_ = tmp_.path() / "haproxy" / "admin.sock";
    haproxy_ = std::make_unique<HaproxyUnderTest>(
        tmp_.path(), master, haproxy_front_,
        std::vector<std::string>{"stats_socket=" + haproxy_socket_.string()});
    return *haproxy_;
  }

  std::unique_ptr<EtcdServer> etcd_;
  TempDir tmp_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
  std::unique_ptr<HaproxyUnderTest> haproxy_;
  std::string haproxy_front_;
  std::filesystem::path haproxy_socket_;
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
  // /health stays 200 (no reason to move minions) and says why under "degraded".
  HttpResponse health;
  ASSERT_TRUE(WaitFor(
      [&] {
        health = HealthOf(m1);
        return health.body.find("coordination unavailable: etcd /v3/") != std::string::npos;
      },
      20s, 200ms))
      << health.status << " " << health.body;
  EXPECT_EQ(health.status, 200) << health.body;
  auto body = nlohmann::json::parse(health.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(body.is_object() && body.contains("degraded")) << health.body;
  EXPECT_NE(body["degraded"].dump().find("coordination unavailable"), std::string::npos);
  EXPECT_EQ(body["problems"], nlohmann::json::array()) << health.body;
  // The last known list stays: m2 is still linked and its minion still answers m1's jobs.
  EXPECT_EQ(Links(m1), (std::map<std::string, bool>{{"m2", true}}));
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last, 30s)) << last;
  EXPECT_TRUE(m1.Alive() && m2.Alive());

  ASSERT_TRUE(etcd_->Restart()) << etcd_->Log();
  ASSERT_TRUE(WaitFor([&] { return Status(m1).value("coordination", "") == "ok"; }, 30s, 200ms))
      << Status(m1).dump();
  EXPECT_EQ(Status(m1)["members"], nlohmann::json({"m1", "m2"}));
  ASSERT_TRUE(
      WaitFor([&] { return HealthOf(m1).body.find("degraded") == std::string::npos; }, 20s, 200ms))
      << HealthOf(m1).body;
}

// cluster.members reads the live records from etcd; cluster.leave, run on another master,
// drains the named one (503 "leaving", new sign-ins unanswered) until its last minion is gone,
// then it deregisters and the others close their links.
TEST_F(EtcdMembershipTest, LeaveDrainsTheMasterThenDeregistersIt) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  nlohmann::json members = MembersOn(m1);
  ASSERT_TRUE(members.contains("m1") && members.contains("m2")) << members.dump();
  EXPECT_EQ(members.size(), 2u) << members.dump();
  EXPECT_EQ(members["m1"].value("self", false), true) << members.dump();
  EXPECT_EQ(members["m2"].value("self", true), false) << members.dump();
  EXPECT_EQ(members["m2"].value("address", ""), m2.ip()) << members.dump();
  EXPECT_EQ(members["m2"].value("ret_port", 0), 4506) << members.dump();
  EXPECT_EQ(members["m2"].value("health_port", 0), 4510) << members.dump();
  EXPECT_FALSE(members["m2"].value("version", "").empty()) << members.dump();
  EXPECT_EQ(MembersOn(m2)["m2"].value("self", false), true);

  MinionUnderTest& alpha = AddMinion("alpha", m2);
  ASSERT_TRUE(EveryMinionAnswers(m1, "*", {"test.ping"}, 1, &last)) << last;

  auto leave = std::async(std::launch::async, [&] {
    return m1.Cli("halite-run", {"--out", "json", "cluster.leave", "m2", "timeout=120"}, 180s);
  });
  HttpResponse health;
  ASSERT_TRUE(WaitFor(
      [&] {
        health = HealthOf(m2);
        return health.status == 503 && health.body.find("leaving the cluster") != std::string::npos;
      },
      30s, 100ms))
      << health.status << " " << health.body << "\n"
      << m2.Log();
  EXPECT_NE(health.body.find("leaving the cluster (cluster.leave): draining 1 minions"),
            std::string::npos)
      << health.body;
  // A new minion session is not taken while leaving: its sign-in goes unanswered.
  const std::string shed = "halite_auth_total{master=\"m2\",result=\"shed\"}";
  const double shed_before = Metric(m2.ip(), 4510, shed).value_or(-1);
  MinionUnderTest& beta = AddMinion("beta", m2);
  ASSERT_TRUE(
      WaitFor([&] { return Metric(m2.ip(), 4510, shed).value_or(-1) > shed_before; }, 30s, 100ms))
      << m2.Log();
  beta.Kill();
  // Still a member while a minion holds on.
  EXPECT_TRUE(MembersOn(m1).contains("m2"));
  EXPECT_EQ(leave.wait_for(0s), std::future_status::timeout);

  alpha.Stop();  // its last minion goes: the drain ends long before the 120 s timeout
  const auto gone = std::chrono::steady_clock::now();
  ASSERT_EQ(leave.wait_for(60s), std::future_status::ready);
  auto result = leave.get();
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("\"left\": true"), std::string::npos) << result.out;
  EXPECT_LT(std::chrono::steady_clock::now() - gone, 20s);
  members = MembersOn(m1);
  EXPECT_TRUE(members.size() == 1 && members.contains("m1")) << members.dump();
  ASSERT_TRUE(LinksBecome(m1, {}, 20s, &last)) << last;
  EXPECT_EQ(Status(m2).value("membership", ""), "left");
  EXPECT_NE(HealthOf(m2).body.find("left the cluster"), std::string::npos);
  EXPECT_NE(m2.Log().find("drained in"), std::string::npos) << m2.Log();
  // Leaving a name that is not a member is an error, at once.
  auto again = m1.Cli("halite-run", {"cluster.leave", "m2"}, 30s);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE((again.out + again.err).find("not a member"), std::string::npos) << again.out;
}

// "show servers state" of `backend` on the HAProxy behind `socket`: server -> its line.
std::map<std::string, cluster::HaproxyServerState> ServersOf(const std::filesystem::path& socket,
                                                             const std::string& backend) {
  std::map<std::string, cluster::HaproxyServerState> out;
  auto text = cluster::MakeHaproxySocket(socket)->Command("show servers state " + backend);
  if (!text.ok()) return out;
  auto servers = cluster::ParseServersState(*text);
  if (!servers.ok()) return out;
  for (auto& s : *servers) out[s.name] = s;
  return out;
}

// HAProxy follows membership: its config lists the live members, and a member that joins or
// leaves reaches the running HAProxy through cluster.haproxy_sync (its admin socket), without
// a restart; minions through HAProxy keep answering throughout.
TEST_F(EtcdMembershipTest, HaproxyFollowsJoinAndLeaveWithoutRestart) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  HaproxyUnderTest& haproxy = HaproxyWithAdminSocket(m1);
  const std::string front = haproxy_front_;
  const auto socket = haproxy_socket_;
  EXPECT_NE(haproxy.Config().find("server m1 " + m1.ip() + ":4505 check port 4510"),
            std::string::npos)
      << haproxy.Config();
  EXPECT_NE(haproxy.Config().find("server m2 " + m2.ip() + ":4506 check port 4510"),
            std::string::npos)
      << haproxy.Config();
  haproxy.Start();
  for (const char* id : {"web0", "web1", "web2"}) AddMinionAt(id, front);
  ASSERT_TRUE(EveryMinionAnswers(m1, "web*", {"test.ping"}, 3, &last)) << last;

  auto sync = [&](MasterUnderTest& on) {
    auto r = on.Cli("halite-run",
                    {"--out", "json", "cluster.haproxy_sync", "socket=" + socket.string()}, 60s);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j : nlohmann::json::object();
  };
  // Nothing to do while HAProxy already serves the members.
  nlohmann::json report = sync(m1);
  EXPECT_EQ(report["added"], nlohmann::json::array()) << report.dump();
  EXPECT_EQ(report["removed"], nlohmann::json::array()) << report.dump();

  MasterUnderTest& m3 = AddMaster("m3");
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}, {"m3", true}}, 30s, &last)) << last;
  report = sync(m2);
  EXPECT_EQ(report["added"], nlohmann::json({"halite_publish/m3", "halite_request/m3"}))
      << report.dump();
  for (const char* backend : {"halite_publish", "halite_request"}) {
    auto servers = ServersOf(socket, backend);
    ASSERT_EQ(servers.count("m3"), 1u) << backend;
    EXPECT_EQ(servers["m3"].address, m3.ip());
    EXPECT_EQ(servers["m3"].check_port, 4510);
  }
  // m3's health check passes: HAProxy sends it traffic (srv_op_state 2, running).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto text =
            cluster::MakeHaproxySocket(socket)->Command("show servers state halite_request");
        return text.ok() && text->find(" m3 " + m3.ip() + " 2 ") != std::string::npos;
      },
      30s, 100ms))
      << haproxy.Log();

  // m1 leaves: HAProxy sees its /health fail and moves its minions; the drain ends, m1
  // deregisters, and the sync deletes it from the running HAProxy.
  auto leave = m2.Cli("halite-run", {"--out", "json", "cluster.leave", "m1", "timeout=60"}, 120s);
  ASSERT_EQ(leave.exit_code, 0) << leave.out << leave.err << m1.Log();
  report = sync(m2);
  EXPECT_EQ(report["removed"], nlohmann::json({"halite_publish/m1", "halite_request/m1"}))
      << report.dump();
  for (const char* backend : {"halite_publish", "halite_request"}) {
    auto servers = ServersOf(socket, backend);
    EXPECT_EQ(servers.count("m1"), 0u) << backend;
    EXPECT_EQ(servers.count("m2") + servers.count("m3"), 2u) << backend;
  }
  ASSERT_TRUE(EveryMinionAnswers(m2, "web*", {"test.ping"}, 3, &last)) << last;
  EXPECT_EQ(Metric(m1.ip(), 4510, "halite_connected_minions{master=\"m1\"}").value_or(-1), 0);
}

// cluster.haproxy_sync follow=True (what halite-haproxy-sync.service runs): with nobody running
// a sync, a master that joins is added to the running HAProxy and one that stops is deleted,
// through the watch of the member list (its periodic sync is set a minute apart).
TEST_F(EtcdMembershipTest, HaproxySyncFollowAddsAndDeletesMastersByItself) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  HaproxyUnderTest& haproxy = HaproxyWithAdminSocket(m1);
  const auto socket = haproxy_socket_;
  haproxy.Start();
  Process follow(
      {BinaryPath("halite-run").string(), "-c", m2.config().string(), "cluster.haproxy_sync",
       "socket=" + socket.string(), "follow=True", "interval=60"},
      tmp_.path() / "follow.log");
  auto in_both = [&](const std::string& name) {
    int n = 0;
    for (const char* backend : {"halite_publish", "halite_request"}) {
      n += static_cast<int>(ServersOf(socket, backend).count(name));
    }
    return n;
  };
  ASSERT_EQ(in_both("m1"), 2);

  MasterUnderTest& m3 = AddMaster("m3");
  EXPECT_TRUE(WaitFor([&] { return in_both("m3") == 2; }, 20s, 100ms)) << follow.Log();
  EXPECT_EQ(ServersOf(socket, "halite_request")["m3"].address, m3.ip());

  m3.Stop();  // revokes its lease: the record goes at once
  EXPECT_TRUE(WaitFor([&] { return in_both("m3") == 0; }, 20s, 100ms)) << follow.Log();
  EXPECT_EQ(in_both("m1") + in_both("m2"), 4);
  // What it printed: a line per sync that changed something.
  EXPECT_NE(follow.Log().find(R"("added": ["halite_publish/m3", "halite_request/m3"])"),
            std::string::npos)
      << follow.Log();
  EXPECT_TRUE(follow.Alive()) << follow.Log();
}

// With etcd each master serves file_roots and pillar_roots from its own disk: each publishes
// a digest per tree in its member record, and cluster.status names the masters that differ,
// until they serve the same files again.
TEST_F(EtcdMembershipTest, MastersServingDifferentTreesAreNamedByClusterStatus) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  std::string last;
  ASSERT_TRUE(LinksBecome(m1, {{"m2", true}}, 30s, &last)) << last;
  auto warnings = [&] {
    const nlohmann::json status = Status(m1);
    last = status.dump();
    return status.contains("warnings") ? status["warnings"] : nlohmann::json();
  };
  WriteFile(m1.dir() / "states" / "top.sls", "base:\n  '*': [web]\n");
  WriteFile(m2.dir() / "states" / "top.sls", "base:\n  '*': [db]\n");
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto w = warnings();
        return w.is_array() && w.size() == 1 &&
               w[0].get<std::string>().rfind("file_roots/base differs between masters: m1 serves ",
                                             0) == 0 &&
               w[0].get<std::string>().find("; m2 serves ") != std::string::npos;
      },
      30s, 500ms))
      << last;
  // The operator deploys the same tree on m2: the warning goes.
  WriteFile(m2.dir() / "states" / "top.sls", "base:\n  '*': [web]\n");
  ASSERT_TRUE(WaitFor([&] { return warnings() == nlohmann::json::array(); }, 30s, 500ms)) << last;
  // A pillar tree only one master has is a difference too.
  WriteFile(m2.dir() / "pillar" / "common.sls", "x: 1\n");
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto w = warnings();
        return w.is_array() && w.size() == 1 &&
               w[0].get<std::string>().rfind("pillar_roots/base differs", 0) == 0;
      },
      30s, 500ms))
      << last;
}

// The minion keys live in etcd (cluster::EtcdKeyStore), not in the shared folder: a minion
// that signs in on one master is pending for halite-key run against another master's config,
// accepted there, and then answers jobs from both; no key file is written anywhere.
TEST_F(EtcdMembershipTest, MinionKeysLiveInEtcdAndHaliteKeyManagesThemFromAnyMaster) {
  MasterUnderTest& m1 = AddMaster("m1", /*auto_accept=*/false);
  MasterUnderTest& m2 = AddMaster("m2", /*auto_accept=*/false);
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
  auto aes_on = [&](MasterUnderTest& master) {
    return AesKeyOf(ctx, "rotor", minion_key, "tcp://" + master.ip() + ":4506");
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

// A shared-folder cluster moves to etcd without re-keying a minion: cluster.import_to_etcd
// copies the keys (every state) and the cluster AES key; an accepted minion then signs in to
// an etcd-mode master at once and gets that same AES key; running it again imports nothing.
TEST_F(EtcdMembershipTest, ImportToEtcdMovesASharedFolderClusterWithoutReKeying) {
  const auto shared = tmp_.path() / "shared";
  auto alpha_key = *wire::RsaPrivateKey::Generate(2048);
  auto beta_key = *wire::RsaPrivateKey::Generate(2048);
  std::string aes_before;
  // The pair alpha pinned as "the master": made by the shared-folder cluster.
  auto cluster_key = keys::LoadOrCreateKeyPair(shared / "pki", "cluster", 2048);
  ASSERT_TRUE(cluster_key.ok());
  {
    auto files = keys::FsKeyStore::Open(shared / "pki");
    ASSERT_TRUE(files.ok());
    ASSERT_TRUE(
        (*files)->Write(keys::KeyState::kAccepted, "alpha", alpha_key.PublicKey().ToPem()).ok());
    ASSERT_TRUE(
        (*files)->Write(keys::KeyState::kPending, "beta", beta_key.PublicKey().ToPem()).ok());
    auto aes = cluster::LoadOrCreateClusterAes(shared / "pki");
    ASSERT_TRUE(aes.ok());
    aes_before = *aes;
  }
  MasterSpec spec;
  spec.id = "m1";
  spec.ip = UniqueLoopbackIp();
  spec.cluster_id = "c1";
  spec.shared_dir = shared;
  spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: [" + etcd_->endpoint() + "]\n";
  masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
  MasterUnderTest& m1 = *masters_.back();
  auto run = m1.Cli("halite-run", {"--out", "json", "cluster.import_to_etcd"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto report = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_EQ(
      report["minion_keys"],
      nlohmann::json(
          {{"minions", 1}, {"minions_pre", 1}, {"minions_rejected", 0}, {"minions_denied", 0}}))
      << run.out;
  EXPECT_EQ(report["aes"], "imported") << run.out;
  EXPECT_EQ(report["cluster_keypair"], "imported") << run.out;
  auto again = nlohmann::json::parse(
      m1.Cli("halite-run", {"--out", "json", "cluster.import_to_etcd"}).out, nullptr, false);
  EXPECT_EQ(again["already_in_etcd"], 2) << again.dump();
  EXPECT_EQ(again["aes"], "already in etcd") << again.dump();
  EXPECT_EQ(again["cluster_keypair"], "already in etcd") << again.dump();
  EXPECT_EQ(again["minion_keys"]["minions"], 0) << again.dump();

  // The folder's keys may go now: the master reads etcd only.
  std::filesystem::remove_all(shared / "pki" / "minions");
  std::filesystem::remove_all(shared / "pki" / "minions_pre");
  std::filesystem::remove(shared / "pki" / ".aes");
  std::filesystem::remove(shared / "pki" / "cluster.pem");
  std::filesystem::remove(shared / "pki" / "cluster.pub");
  m1.Start();
  zmq::context_t ctx;
  RawMinion alpha("alpha", alpha_key, "tcp://" + m1.ip() + ":4506");
  // Signed with the pair alpha knows: a minion that pinned it keeps trusting the master.
  auto auth = alpha.Auth(ctx, cluster_key->PublicKey());
  ASSERT_TRUE(auth.ok()) << auth.error().ToString();
  EXPECT_TRUE(auth->signature_ok) << "the master signs with another pair after the import";
  ASSERT_TRUE(auth->aes.has_value())
      << "alpha is not accepted after the import: " << auth->inner.ToJson();
  EXPECT_EQ(auth->aes->key_string(), aes_before);
  EXPECT_EQ(m1.Cli("halite-key", {"-l", "un"}).out, "Unaccepted Keys:\nbeta\n");
}

}  // namespace
}  // namespace halite::testing
