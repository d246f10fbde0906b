// The rest of a cluster's shared state, each store run against both backends (files of a
// shared folder, a real etcd) so that they cannot drift (issue 17): the cluster key pair
// (cluster/cluster_keypair.h), the minions' session keys (master/session_keys.h, etcd in
// stores/etcd_session_keys.h) and the health thread's quorum views (cluster/quorum.h).
#include <gtest/gtest.h>

#include <future>
#include <set>

#include "etcd_server.h"
#include "halite/cluster/cluster_keypair.h"
#include "halite/cluster/quorum.h"
#include "halite/master/session_keys.h"
#include "halite/stores/etcd_session_keys.h"
#include "halite/wire/crypticle.h"
#include "halite/wire/rsa.h"
#include "harness.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<cluster::EtcdClient> SharedEtcdClient(std::chrono::milliseconds timeout = 2000ms) {
  auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}, timeout});
  EXPECT_TRUE(client.ok());
  return client.ok() ? std::move(client).value() : nullptr;
}

// A fresh etcd prefix per test, so tests on one etcd never see each other's keys.
std::string FreshPrefix(const std::string& what) {
  static int n = 0;
  return "/" + what + std::to_string(++n) + "-" + std::to_string(::getpid()) + "/";
}

class StateContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "etcd") {
      ASSERT_NE(SharedEtcd(), nullptr) << "etcd did not start";
    }
    prefix_ = FreshPrefix("state");
  }
  bool OnEtcd() const { return GetParam() == "etcd"; }

  TempDir tmp_;
  std::string prefix_;
};

// --- the cluster key pair -------------------------------------------------------------------

class ClusterKeyPairContractTest : public StateContractTest {
 protected:
  // A store on the cluster's one pair (a master of its own each time).
  std::unique_ptr<cluster::ClusterKeyPairStore> Open() {
    if (!OnEtcd()) return cluster::MakeFileClusterKeyPair(tmp_.path());
    return cluster::MakeEtcdClusterKeyPair(SharedEtcdClient(), prefix_ + "cluster/keypair");
  }
};

TEST_P(ClusterKeyPairContractTest, MastersStartingAtOnceAgreeOnOnePair) {
  std::vector<std::unique_ptr<cluster::ClusterKeyPairStore>> masters;
  for (int i = 0; i < 4; ++i) masters.push_back(Open());
  EXPECT_EQ(masters[0]->Read().error().code, ErrorCode::kNotFound);
  std::vector<std::future<Result<cluster::ClusterKeyPair>>> started;
  for (std::size_t i = 0; i < masters.size(); ++i) {
    started.push_back(std::async(std::launch::async, [&, i] {
      return masters[i]->LoadOrCreate(2048, "m" + std::to_string(i));
    }));
  }
  std::set<std::string> pems, pubs;
  for (auto& f : started) {
    auto pair = f.get();
    ASSERT_TRUE(pair.ok()) << pair.error().ToString();
    pems.insert(pair->key.ToPem());
    pubs.insert(pair->pub_text);
    // The public text is the private key's.
    EXPECT_EQ(wire::RsaPublicKey::FromPem(pair->pub_text).value().ToPem(),
              pair->key.PublicKey().ToPem());
  }
  ASSERT_EQ(pems.size(), 1u) << "masters started at once made different cluster keys";
  ASSERT_EQ(pubs.size(), 1u);
  auto later = Open()->LoadOrCreate(2048, "m9");  // a later start reads it
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->key.ToPem(), *pems.begin());
  EXPECT_EQ(later->pub_text, *pubs.begin());
}

// An imported pair keeps its public text byte for byte (what minions pinned), and adopting
// never replaces a pair that is there.
TEST_P(ClusterKeyPairContractTest, AdoptKeepsThePublicTextVerbatimAndNeverOverwrites) {
  auto key = wire::RsaPrivateKey::Generate(2048);
  ASSERT_TRUE(key.ok());
  const std::string pub = key->PublicKey().ToPem() + "\n";  // Salt's files end like this
  auto store = Open();
  ASSERT_TRUE(store->Adopt({*key, pub}).value());
  auto read = Open()->Read();
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read->pub_text, pub);
  EXPECT_EQ(read->key.ToPem(), key->ToPem());
  auto other = wire::RsaPrivateKey::Generate(2048);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(Open()->Adopt({*other, other->PublicKey().ToPem()}).value());
  EXPECT_EQ(Open()->LoadOrCreate(2048, "m1").value().key.ToPem(), key->ToPem());
}

INSTANTIATE_TEST_SUITE_P(Backends, ClusterKeyPairContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// --- session keys ---------------------------------------------------------------------------

class SessionKeysContractTest : public StateContractTest {
 protected:
  // One master's view of the cluster's session keys.
  std::unique_ptr<master::SessionKeys> Open(std::chrono::seconds lifetime = 3600s) {
    if (!OnEtcd()) return master::MakeFileSessionKeys(tmp_.path() / "sessions", lifetime);
    std::vector<std::unique_ptr<cluster::EtcdClient>> clients;
    clients.push_back(SharedEtcdClient());
    clients.push_back(SharedEtcdClient());
    return stores::MakeEtcdSessionKeys(std::move(clients), prefix_ + "sessions/", lifetime);
  }
  keys::FileStamp Stamp(std::uint64_t revision) { return {0x65746364, revision, 450, 0}; }
};

// A minion signs in on several masters at the same instant (or moves between them): every
// master hands out and accepts the same key.
TEST_P(SessionKeysContractTest, MastersAskingAtOnceAgreeOnOneKey) {
  std::vector<std::unique_ptr<master::SessionKeys>> masters;
  for (int i = 0; i < 4; ++i) masters.push_back(Open());
  std::vector<std::future<Result<master::CrypticlePtr>>> asked;
  for (auto& m : masters) {
    asked.push_back(
        std::async(std::launch::async, [&m, this] { return m->Get("web1", Stamp(7)); }));
  }
  std::set<std::string> keys;
  for (auto& f : asked) {
    auto key = f.get();
    ASSERT_TRUE(key.ok()) << key.error().ToString();
    keys.insert((*key)->key_string());
  }
  EXPECT_EQ(keys.size(), 1u) << "one minion got " << keys.size() << " session keys";
  EXPECT_EQ(Open()->Get("web1", Stamp(7)).value()->key_string(), *keys.begin());
  // Another minion's is its own.
  EXPECT_NE(masters[0]->Get("web2", Stamp(8)).value()->key_string(), *keys.begin());
  EXPECT_EQ(masters[0]->SizeForTest(), 2u);
}

// A master that renews a key (expired) is followed by another once that one forgets its
// copy (a request that did not decrypt): no master keeps handing out a replaced key.
TEST_P(SessionKeysContractTest, ARenewalOnOneMasterIsReadByAnotherAfterForget) {
  // 2 s: the etcd backend counts whole seconds, so a 1 s key made at 0.99 had already run out
  // when b read it at 1.01 (CI saw exactly that); 2 s guarantees b at least a full second.
  auto a = Open(2s), b = Open(2s);
  const std::string first = a->Get("web1", Stamp(7)).value()->key_string();
  EXPECT_EQ(b->Get("web1", Stamp(7)).value()->key_string(), first);
  // Past the lifetime.
  std::string renewed;
  ASSERT_TRUE(WaitFor(
      [&] {
        renewed = a->Get("web1", Stamp(7)).value()->key_string();
        return renewed != first;
      },
      8s, 100ms));
  b->Forget("web1");
  EXPECT_EQ(b->Get("web1", Stamp(7)).value()->key_string(), renewed);
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionKeysContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// etcd: a session is bound to the accepted key it was made for. A minion deleted and accepted
// again (a new key, a new stamp) gets a new session on every master, so nothing encrypted
// for the old key's session is accepted for the new one.
TEST(EtcdSessionKeysTest, AReAcceptedKeyGetsANewSessionOnEveryMaster) {
  ASSERT_NE(SharedEtcd(), nullptr);
  const std::string prefix = FreshPrefix("sessions");
  auto open = [&] {
    std::vector<std::unique_ptr<cluster::EtcdClient>> clients;
    clients.push_back(SharedEtcdClient());
    return stores::MakeEtcdSessionKeys(std::move(clients), prefix, 3600s);
  };
  auto a = open(), b = open();
  const keys::FileStamp old_key{0x65746364, 10, 450, 0}, new_key{0x65746364, 42, 450, 0};
  const std::string first = a->Get("web1", old_key).value()->key_string();
  EXPECT_EQ(b->Get("web1", old_key).value()->key_string(), first);
  const std::string second = b->Get("web1", new_key).value()->key_string();
  EXPECT_NE(second, first);
  EXPECT_EQ(a->Get("web1", new_key).value()->key_string(), second);
}

// etcd away: a session already known is served from memory (requests keep working); a new
// one (a minion that moved here) is this master's own, made in bounded time, not a hang.
TEST(EtcdSessionKeysTest, WithEtcdDownKnownSessionsServeAndNewOnesAreLocal) {
  auto etcd = EtcdServer::Start(UniqueLoopbackIp());
  ASSERT_NE(etcd, nullptr);
  std::vector<std::unique_ptr<cluster::EtcdClient>> clients;
  clients.push_back(cluster::MakeEtcdClient({{etcd->endpoint()}, 500ms}).value());
  auto keys = stores::MakeEtcdSessionKeys(std::move(clients), "/s/", 3600s);
  const keys::FileStamp stamp{0x65746364, 10, 450, 0};
  const std::string known = keys->Get("web1", stamp).value()->key_string();
  etcd->Stop();
  EXPECT_EQ(keys->Get("web1", stamp).value()->key_string(), known);
  const auto start = std::chrono::steady_clock::now();
  auto fresh = keys->Get("web2", stamp);
  ASSERT_TRUE(fresh.ok()) << fresh.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE((*fresh)->key_string(), known);
  // The same key for its next requests, from memory.
  EXPECT_EQ(keys->Get("web2", stamp).value()->key_string(), (*fresh)->key_string());
  // Back: a minion this master never saw gets the cluster's key again (made in etcd).
  ASSERT_TRUE(etcd->Restart());
  std::vector<std::unique_ptr<cluster::EtcdClient>> other_clients;
  other_clients.push_back(cluster::MakeEtcdClient({{etcd->endpoint()}, 500ms}).value());
  auto other = stores::MakeEtcdSessionKeys(std::move(other_clients), "/s/", 3600s);
  EXPECT_EQ(keys->Get("web3", stamp).value()->key_string(),
            other->Get("web3", stamp).value()->key_string());
}

// --- quorum views ---------------------------------------------------------------------------

class QuorumViewsContractTest : public StateContractTest {
 protected:
  std::unique_ptr<cluster::QuorumViewStore> Open() {
    if (!OnEtcd()) return cluster::MakeFileQuorumViews(tmp_.path() / "quorum");
    return cluster::MakeEtcdQuorumViews(SharedEtcdClient(300ms), prefix_ + "quorum/");
  }
};

TEST_P(QuorumViewsContractTest, EachMastersViewIsReadByTheOthersAndOnlyTheIdsAsked) {
  auto m1 = Open(), m2 = Open(), m3 = Open();
  ASSERT_TRUE(m1->Write({"m1", 1, {"m2"}, true}).ok());
  ASSERT_TRUE(m2->Write({"m2", 5, {"m1"}, false}).ok());
  ASSERT_TRUE(m3->Write({"m3", 2, {}, true}).ok());
  auto views = m1->Read({"m2", "m3"});
  ASSERT_TRUE(views.ok()) << views.error().ToString();
  ASSERT_EQ(views->size(), 2u);
  std::map<std::string, cluster::QuorumView> by_id;
  for (const auto& v : *views) by_id[v.id] = v;
  EXPECT_EQ(by_id["m2"], (cluster::QuorumView{"m2", 5, {"m1"}, false}));
  EXPECT_EQ(by_id["m3"], (cluster::QuorumView{"m3", 2, {}, true}));
  // A later round replaces the view.
  ASSERT_TRUE(m2->Write({"m2", 6, {"m1", "m3"}, true}).ok());
  auto again = m3->Read({"m2"});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->front(), (cluster::QuorumView{"m2", 6, {"m1", "m3"}, true}));
  // A master never seen is left out, not an error.
  EXPECT_TRUE(m1->Read({"m7"}).value().empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, QuorumViewsContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// A store that cannot be read is Unavailable (the round decides nothing), within its deadline.
TEST(EtcdQuorumViewsTest, NoEtcdIsUnavailableFast) {
  auto client = cluster::MakeEtcdClient({{"http://" + UniqueLoopbackIp() + ":2379"}, 300ms});
  ASSERT_TRUE(client.ok());
  auto views = cluster::MakeEtcdQuorumViews(std::move(client).value(), "/q/");
  const auto start = std::chrono::steady_clock::now();
  auto read = views->Read({"m2"});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(views->Write({"m1", 1, {}, true}).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

}  // namespace
}  // namespace halite::testing
