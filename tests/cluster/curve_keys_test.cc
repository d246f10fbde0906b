#include "halite/cluster/curve_keys.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zmq.h>

#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "halite/cluster/shared_state.h"
#include "halite/keys/fs.h"

namespace halite::cluster {
namespace {

namespace fs = std::filesystem;

class CurveKeysTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-curve-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    pki_ = dir_ / "pki";
    shared_ = dir_ / "shared";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string FreshPublicKey() {
    char public_key[41];
    char secret_key[41];
    EXPECT_EQ(zmq_curve_keypair(public_key, secret_key), 0);
    return public_key;
  }

  fs::path dir_;
  fs::path pki_;
  fs::path shared_;
};

// Keys and the cluster's shared state are the master's user's alone, whatever the umask.
TEST_F(CurveKeysTest, EverythingWrittenIsPrivateWhateverTheUmask) {
  const mode_t saved = ::umask(0);
  auto pair = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  Status published = PublishMasterKey(shared_, "m1", "-----BEGIN PUBLIC KEY-----\nAAAA\n");
  auto aes = LoadOrCreateClusterAes(shared_);
  auto rotated = RotateClusterAes(shared_, "m1");
  ::umask(saved);
  ASSERT_TRUE(pair.ok()) << pair.error().ToString();
  ASSERT_TRUE(published.ok()) << published.error().ToString();
  ASSERT_TRUE(aes.ok()) << aes.error().ToString();
  ASSERT_TRUE(rotated.ok()) << rotated.error().ToString();
  std::string offenders;
  for (const fs::path& root : {pki_, shared_}) {
    auto check = [&](const fs::path& path) {
      struct stat st {};
      ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
      if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        offenders += "\n  " + path.string() + " " + mode;
      }
    };
    check(root);
    for (const auto& entry : fs::recursive_directory_iterator(root)) check(entry.path());
  }
  EXPECT_TRUE(offenders.empty()) << "group/other may read or enter:" << offenders;
}

TEST_F(CurveKeysTest, CreatesThePairOnceAndPublishesThePublicKey) {
  auto first = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->public_key.size(), 40u);
  EXPECT_EQ(first->secret_key.size(), 40u);

  struct stat st {};
  ASSERT_EQ(::stat((pki_ / "peer_curve.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto published = ReadPeerCurveKey(shared_, "m1");
  ASSERT_TRUE(published.ok()) << published.error().ToString();
  EXPECT_EQ(*published, first->public_key);

  EXPECT_TRUE(IsCurveKeyPair(*first));
  EXPECT_FALSE(IsCurveKeyPair({first->public_key, FreshPublicKey()}));

  auto again = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->public_key, first->public_key);
  EXPECT_EQ(again->secret_key, first->secret_key);
}

TEST_F(CurveKeysTest, MismatchedPublishedKeyTellsTheOperatorWhatToRemove) {
  ASSERT_TRUE(keys::EnsureDir(shared_ / "peers", 0755).ok());
  ASSERT_TRUE(
      keys::WriteFileAtomic(PeerCurveKeyPath(shared_, "m1"), FreshPublicKey() + "\n", 0644).ok());
  auto keys = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(keys.error().message.find(
                "peers/m1.curve belongs to another key: remove it if this master was rebuilt"),
            std::string::npos)
      << keys.error().message;
}

TEST_F(CurveKeysTest, RebuiltMasterWithTheSameIdIsRefused) {
  ASSERT_TRUE(LoadOrCreateCurveKeys(pki_, shared_, "m1").ok());
  auto rebuilt = LoadOrCreateCurveKeys(dir_ / "new-pki", shared_, "m1");
  ASSERT_FALSE(rebuilt.ok());
  EXPECT_EQ(rebuilt.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(rebuilt.error().message.find("belongs to another key"), std::string::npos);
}

TEST_F(CurveKeysTest, GarbageInThePublishedFileIsAlsoRefused) {
  ASSERT_TRUE(keys::EnsureDir(shared_ / "peers", 0755).ok());
  ASSERT_TRUE(keys::WriteFileAtomic(PeerCurveKeyPath(shared_, "m1"), "not a key\n", 0644).ok());
  auto keys = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(CurveKeysTest, CorruptSecretFileIsDataLoss) {
  ASSERT_TRUE(keys::EnsureDir(pki_, 0700).ok());
  ASSERT_TRUE(keys::WriteFileAtomic(pki_ / "peer_curve.key", "garbage", 0600).ok());
  auto keys = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code, ErrorCode::kDataLoss);

  // Two valid keys that are not a pair.
  std::string text = FreshPublicKey() + "\n" + FreshPublicKey() + "\n";
  ASSERT_TRUE(keys::WriteFileAtomic(pki_ / "peer_curve.key", text, 0600).ok());
  keys = LoadOrCreateCurveKeys(pki_, shared_, "m1");
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.error().code, ErrorCode::kDataLoss);
}

TEST_F(CurveKeysTest, IdsThatCannotNameAFileAreInvalid) {
  for (const char* id : {"", ".", "..", "a/b"}) {
    auto keys = LoadOrCreateCurveKeys(pki_, shared_, id);
    ASSERT_FALSE(keys.ok()) << id;
    EXPECT_EQ(keys.error().code, ErrorCode::kInvalidArgument) << id;
  }
  EXPECT_TRUE(IsValidPeerId("127.0.0.2"));
  EXPECT_FALSE(IsValidPeerId(std::string("a\0b", 3)));
}

TEST_F(CurveKeysTest, ConcurrentFirstStartsAgreeOnOnePair) {
  constexpr int kThreads = 4;
  std::vector<Result<CurveKeyPair>> results(kThreads, Error::Internal("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { results[t] = LoadOrCreateCurveKeys(pki_, shared_, "m1"); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.error().ToString();
    EXPECT_EQ(result->public_key, results[0]->public_key);
    EXPECT_EQ(result->secret_key, results[0]->secret_key);
  }
}

TEST_F(CurveKeysTest, ReadPeerCurveKeyReportsMissingAndMalformedKeys) {
  auto missing = ReadPeerCurveKey(shared_, "nobody");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  ASSERT_TRUE(keys::EnsureDir(shared_ / "peers", 0755).ok());
  ASSERT_TRUE(
      keys::WriteFileAtomic(PeerCurveKeyPath(shared_, "bad"), std::string(40, ' '), 0644).ok());
  auto bad = ReadPeerCurveKey(shared_, "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);

  std::string key = FreshPublicKey();
  ASSERT_TRUE(
      keys::WriteFileAtomic(PeerCurveKeyPath(shared_, "good"), "  " + key + "\r\n", 0644).ok());
  auto good = ReadPeerCurveKey(shared_, "good");
  ASSERT_TRUE(good.ok()) << good.error().ToString();
  EXPECT_EQ(*good, key);
  EXPECT_EQ(CurveKeyBytes(key).size(), 32u);
}

}  // namespace
}  // namespace halite::cluster
