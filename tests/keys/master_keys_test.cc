#include "halite/keys/master_keys.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "halite/keys/fs.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

constexpr int kBits = 1024;  // the smallest size Generate allows keeps the tests fast

class MasterKeysTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-master-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    pki_ = dir_ / "pki";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static mode_t ModeOf(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(pki_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
  fs::path pki_;
};

TEST_F(MasterKeysTest, CreatesKeyPairWithSaltFormatsAndModes) {
  auto key = LoadOrCreateKeyPair(pki_, "master", kBits);
  ASSERT_TRUE(key.ok()) << key.error().ToString();
  EXPECT_EQ(ModeOf(pki_), 0700u);
  EXPECT_EQ(Entries(), (std::vector<std::string>{"master.pem", "master.pub"}));

  const std::string pem = ReadFile(pki_ / "master.pem").value();
  EXPECT_TRUE(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
  EXPECT_EQ(pem, key->ToPem());
  EXPECT_EQ(ModeOf(pki_ / "master.pem"), 0400u);

  const std::string pub = ReadPublicKeyText(pki_, "master").value();
  EXPECT_TRUE(pub.starts_with("-----BEGIN PUBLIC KEY-----\n"));
  EXPECT_TRUE(pub.ends_with("-----END PUBLIC KEY-----\n"));
  EXPECT_EQ(pub, key->PublicKey().ToPem());
  EXPECT_EQ(ModeOf(pki_ / "master.pub"), 0600u);
}

TEST_F(MasterKeysTest, SecondCallLoadsTheSameKey) {
  auto first = LoadOrCreateKeyPair(pki_, "cluster", kBits);
  ASSERT_TRUE(first.ok());
  auto second = LoadOrCreateKeyPair(pki_, "cluster", kBits);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->ToPem(), second->ToPem());
}

TEST_F(MasterKeysTest, MissingPublicKeyIsRegenerated) {
  auto key = LoadOrCreateKeyPair(pki_, "minion", kBits);
  ASSERT_TRUE(key.ok());
  const std::string pub = ReadPublicKeyText(pki_, "minion").value();
  ASSERT_TRUE(RemoveFile(pki_ / "minion.pub").ok());
  ASSERT_TRUE(LoadOrCreateKeyPair(pki_, "minion", kBits).ok());
  EXPECT_EQ(ReadPublicKeyText(pki_, "minion").value(), pub);
}

TEST_F(MasterKeysTest, ExistingKeyFromTestVectorsIsLoaded) {
  ASSERT_TRUE(EnsureDir(pki_, 0700).ok());
  const std::string pem =
      ReadFile(fs::path(HALITE_TEST_DATA_DIR) / "vectors" / "key_master.pem").value();
  ASSERT_TRUE(WriteFileAtomic(pki_ / "master.pem", pem, 0400).ok());
  auto key = LoadOrCreateKeyPair(pki_, "master", kBits);
  ASSERT_TRUE(key.ok()) << key.error().ToString();
  EXPECT_EQ(key->size_bytes(), 256u);  // the 2048-bit vector key, not a fresh 1024-bit one
  EXPECT_EQ(ReadPublicKeyText(pki_, "master").value(), key->PublicKey().ToPem());
}

TEST_F(MasterKeysTest, RacingStartsAgreeOnOneKey) {
  constexpr int kThreads = 2;
  std::latch start(kThreads);
  std::vector<std::optional<std::string>> pems(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      auto key = LoadOrCreateKeyPair(pki_, "cluster", kBits);
      if (key.ok()) pems[i] = key->ToPem();
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(pems[0].has_value());
  ASSERT_TRUE(pems[1].has_value());
  EXPECT_EQ(*pems[0], *pems[1]);
  EXPECT_EQ(ReadFile(pki_ / "cluster.pem").value(), *pems[0]);
  auto on_disk = wire::RsaPrivateKey::FromPem(*pems[0]);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(ReadPublicKeyText(pki_, "cluster").value(), on_disk->PublicKey().ToPem());
  EXPECT_EQ(Entries(), (std::vector<std::string>{"cluster.pem", "cluster.pub"}));
}

TEST_F(MasterKeysTest, CorruptPrivateKeyIsDataLoss) {
  ASSERT_TRUE(EnsureDir(pki_, 0700).ok());
  ASSERT_TRUE(WriteFileAtomic(pki_ / "master.pem",
                              "-----BEGIN RSA PRIVATE KEY-----\ngarbage\n"
                              "-----END RSA PRIVATE KEY-----\n",
                              0400)
                  .ok());
  auto key = LoadOrCreateKeyPair(pki_, "master", kBits);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(Entries(), std::vector<std::string>{"master.pem"});  // left for the operator
}

TEST_F(MasterKeysTest, InvalidNameIsInvalidArgument) {
  EXPECT_EQ(LoadOrCreateKeyPair(pki_, "../master", kBits).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ReadPublicKeyText(pki_, "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(pki_));
}

TEST_F(MasterKeysTest, MissingPublicKeyTextIsNotFound) {
  EXPECT_EQ(ReadPublicKeyText(pki_, "master").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace halite::keys
