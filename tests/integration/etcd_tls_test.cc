// etcd over TLS (issue 17: the cluster key pair, session keys and minion keys cross this link,
// so it must not be in the clear): a real etcd with --client-cert-auth and certificates the
// test makes with openssl. The client verifies the server against the CA and the endpoint's
// IP address, and presents its own certificate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "etcd_server.h"
#include "halite/cluster/etcd_client.h"
#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

cluster::EtcdOptions Options(const std::string& endpoint, const TestPki& trust,
                             const TestPki* client) {
  cluster::EtcdOptions o{{endpoint}, 2000ms, trust.ca_cert.string(), "", ""};
  if (client != nullptr) {
    o.cert = client->client_cert.string();
    o.key = client->client_key.string();
  }
  return o;
}

TEST(EtcdTlsTest, TheClientVerifiesTheServerAndPresentsItsCertificate) {
  TempDir tmp;
  const std::string ip = UniqueLoopbackIp();
  const TestPki pki = MakeTestPki(tmp.path() / "pki", ip);
  ASSERT_FALSE(pki.ca_cert.empty());
  auto etcd = EtcdServer::Start(ip, &pki);
  ASSERT_NE(etcd, nullptr);
  ASSERT_EQ(etcd->endpoint().rfind("https://", 0), 0u);

  auto client = cluster::MakeEtcdClient(Options(etcd->endpoint(), pki, &pki));
  ASSERT_TRUE(client.ok()) << client.error().ToString();
  ASSERT_TRUE((*client)->Put("/tls/k", "secret", 0).ok());
  EXPECT_EQ((*client)->Get("/tls/k").value().value, "secret");
  EXPECT_TRUE((*client)->PutIfRevision("/tls/new", "v", 0).value());

  // Without a client certificate etcd refuses the connection.
  auto anonymous = cluster::MakeEtcdClient(Options(etcd->endpoint(), pki, nullptr));
  ASSERT_TRUE(anonymous.ok());
  auto refused = (*anonymous)->Get("/tls/k");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().ToString();

  // A server whose certificate does not chain to our CA is not spoken to.
  const TestPki stranger = MakeTestPki(tmp.path() / "other-ca", ip);
  ASSERT_FALSE(stranger.ca_cert.empty());
  auto wrong_ca = cluster::MakeEtcdClient(Options(etcd->endpoint(), stranger, &stranger));
  ASSERT_TRUE(wrong_ca.ok());
  auto unverified = (*wrong_ca)->Get("/tls/k");
  ASSERT_FALSE(unverified.ok());
  EXPECT_NE(unverified.error().message.find("certificate verify failed"), std::string::npos)
      << unverified.error().ToString();

  // Plain http to a TLS etcd gets nothing.
  auto plain = cluster::MakeEtcdClient({{"http://" + ip + ":2379"}, 2000ms});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->Get("/tls/k").ok());
  // TLS files with an http endpoint are refused up front: the keys would cross in the clear.
  auto mixed = cluster::MakeEtcdClient(Options("http://" + ip + ":2379", pki, &pki));
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().code, ErrorCode::kInvalidArgument);
}

// A certificate from the right CA that names another address is refused: whoever holds some
// certificate of the CA cannot stand in for the etcd the config names.
TEST(EtcdTlsTest, ACertificateForAnotherAddressIsRefused) {
  TempDir tmp;
  const std::string ip = UniqueLoopbackIp();
  const TestPki pki = MakeTestPki(tmp.path() / "pki", UniqueLoopbackIp());  // names another IP
  ASSERT_FALSE(pki.ca_cert.empty());
  auto etcd = EtcdServer::Start(ip, &pki);
  ASSERT_NE(etcd, nullptr);
  auto client = cluster::MakeEtcdClient(Options(etcd->endpoint(), pki, &pki));
  ASSERT_TRUE(client.ok());
  auto read = (*client)->Get("/tls/k");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("certificate verify failed"), std::string::npos)
      << read.error().ToString();
}

// A master configured as a user would (https endpoints, etcd_cacert, etcd_cert, etcd_key)
// registers, signs a minion in and answers jobs; halite-key and halite-run reach etcd the same
// way.
TEST(EtcdTlsTest, AMasterOnATlsEtcdServesMinionsAndItsToolsWork) {
  TempDir tmp;
  const std::string etcd_ip = UniqueLoopbackIp();
  const TestPki pki = MakeTestPki(tmp.path() / "pki", etcd_ip);
  ASSERT_FALSE(pki.ca_cert.empty());
  auto etcd = EtcdServer::Start(etcd_ip, &pki);
  ASSERT_NE(etcd, nullptr);
  MasterSpec spec;
  spec.id = "m1";
  spec.ip = UniqueLoopbackIp();
  spec.auto_accept = true;
  spec.cluster_id = "c1";
  spec.health_port = 4510;
  spec.extra_yaml = "cluster_backend: etcd\netcd_endpoints: [" + etcd->endpoint() +
                    "]\netcd_cacert: " + pki.ca_cert.string() +
                    "\netcd_cert: " + pki.client_cert.string() +
                    "\netcd_key: " + pki.client_key.string() + "\n";
  MasterUnderTest master(tmp.path(), spec);
  master.Start();
  MinionSpec ms;
  ms.id = "web1";
  ms.master_ip = master.ip();
  MinionUnderTest minion(tmp.path(), ms);
  minion.Start();
  std::string last;
  ASSERT_TRUE(EveryMinionAnswers(master, "*", {"test.ping"}, 1, &last)) << last << master.Log();
  auto members = master.Cli("halite-run", {"--out", "json", "cluster.members"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_NE(members.out.find("\"m1\""), std::string::npos) << members.out;
  auto keys = master.Cli("halite-key", {"-l", "acc"});
  EXPECT_EQ(keys.out, "Accepted Keys:\nweb1\n") << keys.err;
  // The key is in etcd, read over TLS.
  auto client = cluster::MakeEtcdClient(Options(etcd->endpoint(), pki, &pki));
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->Get("/halite/keys/minions/web1").ok());
  EXPECT_TRUE((*client)->Get("/halite/cluster/keypair").ok());
}

}  // namespace
}  // namespace halite::testing
