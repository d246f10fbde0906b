// The KeyStore contract (keys/key_store.h) and the ClusterAesStore contract
// (cluster/cluster_aes.h), run against every backend: the files of a pki
// dir (FsKeyStore) and a real etcd (cluster::EtcdKeyStore, issue 17). What only one backend
// does (file modes, directories in a key's place) stays in its own tests
// (tests/keys/fs_key_store_test.cc); what both must do is here, so a backend cannot drift.
#include <gtest/gtest.h>

#include <ctime>
#include <future>
#include <nlohmann/json.hpp>
#include <set>

#include "etcd_server.h"
#include "halite/cluster/cluster_aes.h"
#include "halite/cluster/etcd_key_store.h"
#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/wire/crypticle.h"
#include "harness.h"
#include "http_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;
using keys::KeyState;
using keys::KeyStore;
using std::chrono::minutes;

constexpr std::string_view kPem = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----";
constexpr std::string_view kOtherPem = "-----BEGIN PUBLIC KEY-----\nBBBB\n-----END PUBLIC KEY-----";

// One backend: makes stores that share one set of keys (two masters on one cluster), and
// autosign stubs of a given age the way an operator would.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<KeyStore> Open() = 0;
  virtual void MakeStub(const std::string& id, minutes age) = 0;
  virtual bool StubExists(const std::string& id) = 0;
};

class FilesBackend final : public Backend {
 public:
  std::unique_ptr<KeyStore> Open() override {
    auto store = keys::FsKeyStore::Open(tmp_.path() / "pki");
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  void MakeStub(const std::string& id, minutes age) override {
    const auto path = tmp_.path() / "pki" / "minions_autosign" / id;
    ASSERT_TRUE(keys::WriteFileAtomic(path, "", 0600).ok());
    std::error_code ec;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - age, ec);
    ASSERT_FALSE(ec) << ec.message();
  }
  bool StubExists(const std::string& id) override {
    return std::filesystem::exists(tmp_.path() / "pki" / "minions_autosign" / id);
  }

 private:
  TempDir tmp_;
};

// One etcd for the whole suite; each test gets a prefix of its own.
class EtcdBackend final : public Backend {
 public:
  EtcdBackend() {
    static int n = 0;
    prefix_ = "/contract" + std::to_string(++n) + "-" + std::to_string(::getpid()) + "/keys/";
  }
  std::unique_ptr<KeyStore> Open() override {
    if (SharedEtcd() == nullptr) return nullptr;
    auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
    EXPECT_TRUE(client.ok());
    if (!client.ok()) return nullptr;
    // A long refresh period: what a store sees of another's writes must not depend on it.
    auto store = cluster::EtcdKeyStore::Open(std::move(client).value(), {prefix_, 60s});
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  void MakeStub(const std::string& id, minutes age) override {
    auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
    ASSERT_TRUE(client.ok());
    const auto made = std::time(nullptr) - std::chrono::seconds(age).count();
    ASSERT_TRUE((*client)->Put(prefix_ + "minions_autosign/" + id, std::to_string(made), 0).ok());
  }
  bool StubExists(const std::string& id) override {
    auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
    return client.ok() && (*client)->Get(prefix_ + "minions_autosign/" + id).ok();
  }

 private:
  std::string prefix_;
};

class KeyStoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "files") {
      backend_ = std::make_unique<FilesBackend>();
    } else {
      ASSERT_NE(SharedEtcd(), nullptr) << "etcd did not start";
      backend_ = std::make_unique<EtcdBackend>();
    }
    store_ = backend_->Open();
    ASSERT_NE(store_, nullptr);
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<KeyStore> store_;
};

TEST_P(KeyStoreContractTest, AMissingKeyIsNotFoundEverywhere) {
  EXPECT_EQ(store_->Read(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->Remove(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->Stamp(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(store_->IsDirectory(KeyState::kPending, "web1").value());
  EXPECT_TRUE(store_->Available().ok());
}

TEST_P(KeyStoreContractTest, KeysAreStoredVerbatimPerStateAndReplaced) {
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kPem).ok());
  EXPECT_EQ(store_->Read(KeyState::kPending, "web1").value(), kPem);  // no newline added
  EXPECT_EQ(store_->Read(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kOtherPem).ok());
  EXPECT_EQ(store_->Read(KeyState::kPending, "web1").value(), kOtherPem);
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web1", kPem).ok());
  ASSERT_TRUE(store_->Remove(KeyState::kPending, "web1").ok());
  EXPECT_EQ(store_->Read(KeyState::kPending, "web1").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->Read(KeyState::kAccepted, "web1").value(), kPem);
  // Durable once AfterDurable says so (at once for both backends without a group sync).
  std::promise<Status> durable;
  store_->AfterDurable([&](Status st) { durable.set_value(std::move(st)); });
  auto f = durable.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(f.get().ok());
}

TEST_P(KeyStoreContractTest, ListIsSortedAndPerState) {
  for (const char* id : {"zeta", "alpha", "mid", "Alpha", "web-1.example.com"}) {
    ASSERT_TRUE(store_->Write(KeyState::kAccepted, id, kPem).ok());
  }
  ASSERT_TRUE(store_->Write(KeyState::kRejected, "bad", kPem).ok());
  EXPECT_EQ(store_->List(KeyState::kAccepted).value(),
            (std::vector<std::string>{"Alpha", "alpha", "mid", "web-1.example.com", "zeta"}));
  EXPECT_EQ(store_->List(KeyState::kRejected).value(), std::vector<std::string>{"bad"});
  EXPECT_TRUE(store_->List(KeyState::kDenied).value().empty());
}

TEST_P(KeyStoreContractTest, InvalidIdsAreRefusedAndTouchNothing) {
  for (std::string_view id :
       {std::string_view(""), std::string_view("../x"), std::string_view("a/b"),
        std::string_view(".."), std::string_view("."), std::string_view("a\nb")}) {
    EXPECT_EQ(store_->Read(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Write(KeyState::kAccepted, id, kPem).error().code,
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Remove(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->Stamp(KeyState::kAccepted, id).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->IsDirectory(KeyState::kAccepted, id).error().code,
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(store_->ConsumeAutosignStub(id, minutes(120)).error().code,
              ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(store_->List(KeyState::kAccepted).value().empty());
}

TEST_P(KeyStoreContractTest, TheLongestValidIdCanBeStored) {
  const std::string id(255, 'a');
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, id, kPem).ok());
  EXPECT_EQ(store_->Read(KeyState::kAccepted, id).value(), kPem);
  EXPECT_EQ(store_->List(KeyState::kAccepted).value(), std::vector<std::string>{id});
}

// The parsed-key cache and the session keys hang on the stamp: a key written again, even with
// the same text (removed and accepted again), is a new version.
TEST_P(KeyStoreContractTest, TheStampChangesWhenTheKeyIsWrittenAgain) {
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web1", kPem).ok());
  const keys::FileStamp first = store_->Stamp(KeyState::kAccepted, "web1").value();
  EXPECT_EQ(first.size, kPem.size());
  EXPECT_EQ(store_->Stamp(KeyState::kAccepted, "web1").value(), first);
  ASSERT_TRUE(store_->Remove(KeyState::kAccepted, "web1").ok());
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web1", kPem).ok());
  EXPECT_NE(store_->Stamp(KeyState::kAccepted, "web1").value(), first);
}

// Two masters on one store: what one writes the other reads at once (a minion accepted on
// one master signs in on the other), and a removal reaches the other within its refresh.
TEST_P(KeyStoreContractTest, AnotherMastersWritesAreSeenAndItsRemovalsSoon) {
  auto other = backend_->Open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->Read(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web1", kPem).ok());
  EXPECT_EQ(other->Read(KeyState::kAccepted, "web1").value(), kPem);
  EXPECT_EQ(other->Stamp(KeyState::kAccepted, "web1").value(),
            store_->Stamp(KeyState::kAccepted, "web1").value());
  ASSERT_TRUE(store_->Remove(KeyState::kAccepted, "web1").ok());
  EXPECT_EQ(other->List(KeyState::kAccepted).value(), std::vector<std::string>{});
  // The other's Remove of what is already gone is NotFound, not an error of the store.
  EXPECT_EQ(other->Remove(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(other->Read(KeyState::kAccepted, "web1").error().code, ErrorCode::kNotFound);
}

TEST_P(KeyStoreContractTest, AnAutosignStubSignsOnceEvenWithTwoMastersRacing) {
  backend_->MakeStub("web1", minutes(0));
  auto other = backend_->Open();
  ASSERT_NE(other, nullptr);
  auto a = std::async(std::launch::async,
                      [&] { return store_->ConsumeAutosignStub("web1", minutes(120)); });
  auto b = std::async(std::launch::async,
                      [&] { return other->ConsumeAutosignStub("web1", minutes(120)); });
  Result<bool> ra = a.get(), rb = b.get();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(int(*ra) + int(*rb), 1) << "exactly one master may consume the stub";
  EXPECT_FALSE(backend_->StubExists("web1"));
  EXPECT_FALSE(store_->ConsumeAutosignStub("web1", minutes(120)).value());
}

TEST_P(KeyStoreContractTest, ExpiredStubsAreSweptAndDoNotSignUnlessTheTimeoutIsZero) {
  backend_->MakeStub("web1", minutes(121));
  backend_->MakeStub("other-old", minutes(500));
  backend_->MakeStub("other-new", minutes(1));
  EXPECT_FALSE(store_->ConsumeAutosignStub("web1", minutes(120)).value());
  EXPECT_FALSE(backend_->StubExists("web1"));
  EXPECT_FALSE(backend_->StubExists("other-old"));
  EXPECT_TRUE(backend_->StubExists("other-new"));
  backend_->MakeStub("web2", minutes(100000));
  EXPECT_TRUE(store_->ConsumeAutosignStub("web2", minutes(0)).value());
}

INSTANTIATE_TEST_SUITE_P(Backends, KeyStoreContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// The ClusterAesStore contract (cluster/cluster_aes.h), files and etcd.
class ClusterAesContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "etcd") {
      ASSERT_NE(SharedEtcd(), nullptr) << "etcd did not start";
    }
    static int n = 0;
    etcd_key_ = "/aes" + std::to_string(++n) + "-" + std::to_string(::getpid()) + "/cluster/aes";
  }
  // A store on the cluster's one key (a master of its own each time).
  std::unique_ptr<cluster::ClusterAesStore> Open() {
    if (GetParam() == "files") return cluster::MakeFileClusterAes(tmp_.path());
    auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
    EXPECT_TRUE(client.ok());
    return cluster::MakeEtcdClusterAes(std::move(client).value(), etcd_key_);
  }
  // Makes the stored key look `age` old.
  void Age(std::chrono::seconds age) {
    if (GetParam() == "files") {
      std::filesystem::last_write_time(tmp_.path() / ".aes",
                                       std::filesystem::file_time_type::clock::now() - age);
      return;
    }
    auto client = cluster::MakeEtcdClient({{SharedEtcd()->endpoint()}});
    ASSERT_TRUE(client.ok());
    auto kv = (*client)->Get(etcd_key_);
    ASSERT_TRUE(kv.ok());
    auto value = nlohmann::json::parse(kv->value);
    value["made"] = static_cast<std::int64_t>(std::time(nullptr) - age.count());
    ASSERT_TRUE((*client)->Put(etcd_key_, value.dump(), 0).ok());
  }

  TempDir tmp_;
  std::string etcd_key_;
};

TEST_P(ClusterAesContractTest, MastersStartingAtOnceAgreeOnOneKey) {
  std::vector<std::unique_ptr<cluster::ClusterAesStore>> masters;
  for (int i = 0; i < 4; ++i) masters.push_back(Open());
  std::vector<std::future<Result<std::string>>> started;
  for (auto& m : masters) {
    started.push_back(std::async(std::launch::async, [&m] { return m->LoadOrCreate(); }));
  }
  std::set<std::string> keys;
  for (auto& f : started) {
    auto key = f.get();
    ASSERT_TRUE(key.ok()) << key.error().ToString();
    keys.insert(*key);
  }
  ASSERT_EQ(keys.size(), 1u) << "masters started at once made different cluster keys";
  EXPECT_TRUE(wire::Crypticle::FromKeyString(*keys.begin()).ok());
  EXPECT_EQ(Open()->Read().value().key, *keys.begin());
  EXPECT_EQ(Open()->LoadOrCreate().value(), *keys.begin());  // a later start reads it
}

TEST_P(ClusterAesContractTest, ARotationIsReadByEveryMasterAndAYoungKeyIsNotRotatedAgain) {
  auto a = Open(), b = Open();
  const std::string first = a->LoadOrCreate().value();
  auto rotated = a->Rotate("m1", std::nullopt);
  ASSERT_TRUE(rotated.ok()) << rotated.error().ToString();
  EXPECT_NE(*rotated, first);
  EXPECT_EQ(b->Read().value().key, *rotated);
  EXPECT_LT(b->Read().value().age, std::chrono::seconds(60));
  // On a schedule (publish_session): a key younger than that is left alone.
  auto again = b->Rotate("m2", std::chrono::hours(1));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(a->Read().value().key, *rotated);
}

// Every master's schedule fires at once on a key past its age: exactly one rotates.
TEST_P(ClusterAesContractTest, MastersRacingToRotateOnTheSameScheduleRotateOnce) {
  std::vector<std::unique_ptr<cluster::ClusterAesStore>> masters;
  for (int i = 0; i < 4; ++i) masters.push_back(Open());
  const std::string first = masters[0]->LoadOrCreate().value();
  Age(std::chrono::hours(2));
  std::vector<std::future<Result<std::string>>> rotations;
  for (std::size_t i = 0; i < masters.size(); ++i) {
    rotations.push_back(std::async(std::launch::async, [&, i] {
      return masters[i]->Rotate("m" + std::to_string(i), std::chrono::hours(1));
    }));
  }
  std::vector<std::string> won;
  for (auto& f : rotations) {
    auto r = f.get();
    if (r.ok()) {
      won.push_back(*r);
    } else {
      EXPECT_EQ(r.error().code, ErrorCode::kAlreadyExists) << r.error().ToString();
    }
  }
  ASSERT_EQ(won.size(), 1u) << "masters on one schedule rotated " << won.size() << " times";
  EXPECT_EQ(masters[3]->Read().value().key, won.front());
  EXPECT_NE(won.front(), first);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClusterAesContractTest, ::testing::Values("files", "etcd"),
                         [](const auto& info) { return info.param; });

// etcd only: without etcd, the keys already read keep serving (known minions sign in), and
// what must reach etcd fails with Unavailable in bounded time; all resumes when it is back.
TEST(EtcdKeyStoreTest, WithEtcdDownKnownKeysAreStillReadAndWritesFail) {
  auto etcd = EtcdServer::Start(UniqueLoopbackIp());
  ASSERT_NE(etcd, nullptr);
  auto client = cluster::MakeEtcdClient({{etcd->endpoint()}, 500ms});
  ASSERT_TRUE(client.ok());
  auto opened = cluster::EtcdKeyStore::Open(std::move(client).value(), {"/down/keys/", 100ms});
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  auto& store = **opened;
  ASSERT_TRUE(store.Write(KeyState::kAccepted, "web1", kPem).ok());
  etcd->Stop();
  EXPECT_EQ(store.Read(KeyState::kAccepted, "web1").value(), kPem);
  EXPECT_TRUE(store.Stamp(KeyState::kAccepted, "web1").ok());
  EXPECT_TRUE(store.Available().ok());
  const auto start = std::chrono::steady_clock::now();
  Status written = store.Write(KeyState::kAccepted, "web2", kPem);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, ErrorCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // A key the copy does not hold is judged by the copy (a full read of every key: with etcd
  // away nobody can have written one since), so a known minion's rejected/denied/pending
  // checks answer and it signs in on any master.
  EXPECT_EQ(store.Read(KeyState::kAccepted, "web3").error().code, ErrorCode::kNotFound);
  // Refreshes keep failing meanwhile; the copy is not emptied by them, and it lists.
  EXPECT_FALSE(store.Refresh().ok());
  EXPECT_EQ(store.Read(KeyState::kAccepted, "web1").value(), kPem);
  EXPECT_EQ(store.List(KeyState::kAccepted).value(), std::vector<std::string>{"web1"});
  ASSERT_TRUE(etcd->Restart());
  EXPECT_TRUE(WaitFor([&] { return store.Write(KeyState::kAccepted, "web2", kPem).ok(); }, 10s));
  EXPECT_EQ(store.List(KeyState::kAccepted).value(), (std::vector<std::string>{"web1", "web2"}));
}

// The copy follows etcd's watch: a change or removal made elsewhere (another master,
// etcdctl) reaches it without a full read of every key, an idle store reads nothing, and when
// etcd compacts the history the store was watching from, one full read brings it back.
TEST(EtcdKeyStoreTest, TheCopyFollowsTheWatchAndReadsEverythingOnlyAfterACompaction) {
  auto etcd = EtcdServer::Start(UniqueLoopbackIp());
  ASSERT_NE(etcd, nullptr);
  auto client = cluster::MakeEtcdClient({{etcd->endpoint()}});
  auto other = cluster::MakeEtcdClient({{etcd->endpoint()}});
  ASSERT_TRUE(client.ok() && other.ok());
  auto opened = cluster::EtcdKeyStore::Open(std::move(client).value(), {"/w/keys/", 200ms});
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  auto& store = **opened;
  EXPECT_EQ(store.full_reads(), 1u);
  const std::string key = "/w/keys/minions/web1";
  ASSERT_TRUE((*other)->Put(key, std::string(kPem), 0).ok());
  ASSERT_EQ(store.Read(KeyState::kAccepted, "web1").value(), kPem);  // now in the copy
  // Changed and removed elsewhere: the copy follows (a read would keep answering from the
  // copy otherwise: it holds the key).
  const std::string changed = std::string(kPem) + "\n";
  ASSERT_TRUE((*other)->Put(key, changed, 0).ok());
  EXPECT_TRUE(WaitFor(
      [&] { return store.Read(KeyState::kAccepted, "web1").value_or("") == changed; }, 10s));
  ASSERT_TRUE((*other)->Delete(key).ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        auto read = store.Read(KeyState::kAccepted, "web1");
        return !read.ok() && read.error().code == ErrorCode::kNotFound;
      },
      10s));
  EXPECT_EQ(store.full_reads(), 1u) << "changes came by full reads, not by the watch";
  // History compacted past where the store watches from (writes under another prefix move
  // the revision; the store saw none of them): one full read, and it follows again.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE((*other)->Put("/elsewhere/" + std::to_string(i), "x", 0).ok());
  auto now = (*other)->RangePrefixAt("/elsewhere/");
  ASSERT_TRUE(now.ok());
  auto compacted = HttpCall(etcd->ip(), 2379, "POST", "/v3/kv/compaction", {},
                            "{\"revision\":\"" + std::to_string(now->revision) + "\"}");
  ASSERT_EQ(compacted.status, 200) << compacted.body;
  // Its next watch (each waits at most the refresh period) starts below the compaction.
  EXPECT_TRUE(WaitFor([&] { return store.full_reads() == 2u; }, 10s)) << store.full_reads();
  const std::string again = std::string(kPem) + "\n\n";
  ASSERT_TRUE((*other)->Put(key, again, 0).ok());
  EXPECT_TRUE(
      WaitFor([&] { return store.Read(KeyState::kAccepted, "web1").value_or("") == again; }, 10s));
  EXPECT_EQ(store.full_reads(), 2u);
}

// Opening without etcd is an error that says so (a master does not start blind).
TEST(EtcdKeyStoreTest, OpeningWithoutEtcdSaysSo) {
  auto client = cluster::MakeEtcdClient({{"http://" + UniqueLoopbackIp() + ":2379"}, 300ms});
  ASSERT_TRUE(client.ok());
  auto store = cluster::EtcdKeyStore::Open(std::move(client).value(), {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(store.error().message.find("cannot read the minion keys from etcd"), std::string::npos)
      << store.error().message;
}

}  // namespace
}  // namespace halite::testing
