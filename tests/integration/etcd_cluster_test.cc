// Issue 17's acceptance shape: a cluster with no shared folder at all. Each master has its own
// pki_dir, cachedir and cluster_pki_dir; what they share is a real 3-member etcd (members, minion
// keys, the cluster key pair, the cluster AES key, session keys, quorum views) and a real
// PostgreSQL (the job cache). HAProxy in front; a 4th master joins live, receives minions,
// every master's jobs.lookup_jid is complete, and a master leaves cleanly.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "etcd_server.h"
#include "halite/cluster/etcd_client.h"
#include "halite/cluster/haproxy_runtime.h"
#include "harness.h"
#include "pg_server.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class EtcdClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdCluster::Start(3);
    ASSERT_NE(etcd_, nullptr);
    auto pg = PgServer::Create(UniqueLoopbackIp());
    ASSERT_TRUE(pg.ok()) << pg.error().ToString();
    pg_ = std::move(pg).value();
  }

  // A master with nothing shared on disk: MasterSpec without shared_dir puts pki_dir,
  // cachedir and cluster_pki_dir in the master's own directory.
  MasterUnderTest& AddMaster(const std::string& name) {
    MasterSpec spec;
    spec.id = name;
    spec.ip = UniqueLoopbackIp();
    spec.auto_accept = true;
    spec.cluster_id = "c1";
    spec.health_port = 4510;
    spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: " + etcd_->EndpointsYaml() +
                      "\nmaster_job_cache: postgres\njob_cache:\n  dsn: '" + pg_->dsn() +
                      "'\n  schema: nofolder\n";
    masters_.push_back(std::make_unique<MasterUnderTest>(tmp_.path(), spec));
    masters_.back()->Start();
    return *masters_.back();
  }

  MinionUnderTest& AddMinionAt(const std::string& id, const std::string& ip) {
    return StartMinion(tmp_.path(), id, ip, minions_);
  }

  // The cluster key pair's public half as etcd holds it.
  std::optional<wire::RsaPublicKey> ClusterPubInEtcd() {
    auto client = cluster::MakeEtcdClient({etcd_->Endpoints()});
    if (!client.ok()) return std::nullopt;
    auto kv = (*client)->Get("/halite/cluster/keypair");
    if (!kv.ok()) return std::nullopt;
    auto value = nlohmann::json::parse(kv->value, nullptr, /*allow_exceptions=*/false);
    if (!value.is_object() || !value["pub"].is_string()) return std::nullopt;
    auto pub = wire::RsaPublicKey::FromPem(value["pub"].get<std::string>());
    if (!pub.ok()) return std::nullopt;
    return *pub;
  }

  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<PgServer> pg_;
  TempDir tmp_;
  std::vector<std::unique_ptr<MasterUnderTest>> masters_;
  std::vector<std::unique_ptr<MinionUnderTest>> minions_;
};

TEST_F(EtcdClusterTest, ThreeMastersWithoutASharedFolderServeAndAFourthJoinsLive) {
  MasterUnderTest& m1 = AddMaster("m1");
  MasterUnderTest& m2 = AddMaster("m2");
  MasterUnderTest& m3 = AddMaster("m3");
  const std::string front = UniqueLoopbackIp();
  const auto socket = tmp_.path() / "haproxy" / "admin.sock";
  HaproxyUnderTest haproxy(tmp_.path(), m1, front, {"stats_socket=" + socket.string()});
  haproxy.Start();
  for (const char* id : {"web0", "web1", "web2"}) AddMinionAt(id, front);
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(m1, "web*", {"test.ping"}, 3, &last)) << last;

  // Every master signs as the one cluster key pair etcd holds, though none shares a folder
  // with another; a session key made on one master decrypts requests on every other.
  const auto cluster_pub = ClusterPubInEtcd();
  ASSERT_TRUE(cluster_pub.has_value());
  zmq::context_t ctx;
  RawMinion raw("raw1", NewKey(), RetEndpoint(m1));
  auto signed_in = raw.Auth(ctx, cluster_pub);
  ASSERT_TRUE(signed_in.ok()) << signed_in.error().ToString();
  ASSERT_TRUE(signed_in->signature_ok);
  ASSERT_TRUE(signed_in->session.has_value());
  for (MasterUnderTest* m : {&m2, &m3}) {
    RawMinion there("raw1", raw.key(), RetEndpoint(*m));
    auto reply =
        there.Request(ctx, *signed_in->session, wire::Value::MapOf({{"cmd", "_master_opts"}}));
    EXPECT_TRUE(reply.ok()) << m->id() << ": " << (reply.ok() ? "" : reply.error().ToString());
    auto again = there.Auth(ctx, cluster_pub);
    ASSERT_TRUE(again.ok()) << again.error().ToString();
    EXPECT_TRUE(again->signature_ok) << m->id() << " signs with another key";
    EXPECT_EQ(again->session->key_string(), signed_in->session->key_string()) << m->id();
  }

  // m4 joins with nothing but etcd's address and its name; a sync puts it in HAProxy.
  MasterUnderTest& m4 = AddMaster("m4");
  auto sync = m2.Cli("halite-run",
                     {"--out", "json", "cluster.haproxy_sync", "socket=" + socket.string()}, 60s);
  ASSERT_EQ(sync.exit_code, 0) << sync.out << sync.err;
  for (const char* backend : {"halite_publish", "halite_request"}) {
    ASSERT_TRUE(WaitFor(
        [&] {
          auto text = cluster::MakeHaproxySocket(socket)->Command(
              std::string("show servers state ") + backend);
          return text.ok() && text->find(" m4 " + m4.ip() + " 2 ") != std::string::npos;
        },
        30s, 100ms))
        << backend << "\n"
        << haproxy.Log();
  }
  // New minions land on it (leastconn), and an existing one moved to it keeps the master key
  // it pinned on another master.
  for (const char* id : {"web3", "web4", "web5"}) AddMinionAt(id, front);
  ASSERT_TRUE(std::filesystem::exists(minions_[0]->dir() / "pki" / "minion_master.pub"));
  minions_[0]->MoveTo(m4.ip());  // web0, with its key and pinned minion_master.pub
  ASSERT_TRUE(EveryMinionAnswers(m1, "web*", {"test.ping"}, 6, &last)) << last;
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metric(m4.ip(), 4510, "halite_connected_minions{master=\"m4\"}").value_or(0) >= 2;
      },
      30s, 200ms))
      << "m4 received no minions";

  // A job published on the newest master; every master's lookup_jid is complete.
  auto job = m4.Cli("halite", {"-v", "--out", "txt", "web*", "test.echo", "nofolder"});
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;
  const auto at = job.out.find("jid ");
  ASSERT_NE(at, std::string::npos) << job.out;
  const std::string jid = job.out.substr(at + 4, 20);
  const std::string expected =
      "web0: nofolder\nweb1: nofolder\nweb2: nofolder\nweb3: nofolder\nweb4: nofolder\nweb5: "
      "nofolder\n";
  for (MasterUnderTest* m : {&m1, &m2, &m3, &m4}) {
    ASSERT_TRUE(WaitFor(
        [&] {
          auto lookup = m->Cli("halite-run", {"--out", "txt", "jobs.lookup_jid", jid});
          last = lookup.out + lookup.err;
          return lookup.exit_code == 0 && lookup.out == expected;
        },
        30s, 200ms))
        << m->id() << ": " << last;
  }
  // The minion data cache lives in PostgreSQL too (cache: postgres, the default here): the
  // grains a minion sent to one master are on every master, and target it from any of them.
  for (MasterUnderTest* m : {&m1, &m2, &m3, &m4}) {
    ASSERT_TRUE(WaitFor(
        [&] {
          auto grains = m->Cli("halite-run", {"--out", "json", "cache.grains", "tgt=web*"});
          auto parsed = nlohmann::json::parse(grains.out, nullptr, false);
          last = grains.out + grains.err;
          return grains.exit_code == 0 && parsed.is_object() && parsed.size() == 6 &&
                 parsed["web0"]["kernel"] == "Linux";
        },
        30s, 200ms))
        << m->id() << ": " << last;
  }
  // raw1 sent no grains, and a minion with none is expected by a grain target (as Salt's
  // greedy match has it): its key goes first (halite-key also drops its cached data).
  auto deleted = m1.Cli("halite-key", {"-y", "-d", "raw1"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  auto by_grain = m3.Cli("halite", {"--out", "txt", "-G", "kernel:Linux", "test.echo", "grains"});
  EXPECT_EQ(by_grain.exit_code, 0) << by_grain.out << by_grain.err;
  std::vector<std::string> lines;
  std::istringstream text(by_grain.out);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"web0: grains", "web1: grains", "web2: grains",
                                             "web3: grains", "web4: grains", "web5: grains"}))
      << by_grain.out << by_grain.err;

  // m3 leaves cleanly: its /health fails, HAProxy moves its minions, it deregisters; every
  // minion answers a job published on another master.
  auto leave = m1.Cli("halite-run", {"--out", "json", "cluster.leave", "m3", "timeout=60"}, 120s);
  ASSERT_EQ(leave.exit_code, 0) << leave.out << leave.err << m3.Log();
  ASSERT_TRUE(EveryMinionAnswers(m2, "web*", {"test.ping"}, 6, &last)) << last;
  EXPECT_EQ(Metric(m3.ip(), 4510, "halite_connected_minions{master=\"m3\"}").value_or(-1), 0);

  // Nothing went through a folder: no master's cluster_pki_dir holds another's files.
  for (MasterUnderTest* m : {&m1, &m2, &m3, &m4}) {
    EXPECT_FALSE(std::filesystem::exists(m->dir() / "pki" / "cluster.pem")) << m->id();
    EXPECT_FALSE(std::filesystem::exists(m->dir() / "pki" / ".aes")) << m->id();
    EXPECT_FALSE(std::filesystem::exists(m->dir() / "cache" / "sessions")) << m->id();
    EXPECT_FALSE(std::filesystem::exists(m->dir() / "pki" / "minions")) << m->id();
    EXPECT_FALSE(std::filesystem::exists(m->dir() / "cache" / "minions")) << m->id();
  }
}

}  // namespace
}  // namespace halite::testing
