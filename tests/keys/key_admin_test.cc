#include "halite/keys/key_admin.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "halite/keys/fs.h"
#include "halite/keys/fs_key_store.h"
#include "halite/wire/rsa.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPem = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----";

class KeyAdminTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/halite-keys-admin-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    auto store = FsKeyStore::Open(dir_ / "pki");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(store).value();
    cachedir_ = dir_ / "cache";
    ASSERT_TRUE(EnsureDir(cachedir_, 0700).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  bool Has(KeyState state, std::string_view id) { return store_->Read(state, id).ok(); }

  static mode_t ModeOf(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return st.st_mode & 07777;
  }

  fs::path dir_;
  fs::path cachedir_;
  std::unique_ptr<FsKeyStore> store_;
};

TEST_F(KeyAdminTest, AcceptMovesPendingToAccepted) {
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kPem).ok());
  ASSERT_TRUE(Accept(*store_, "web1").ok());
  EXPECT_EQ(store_->Read(KeyState::kAccepted, "web1").value(), kPem);
  EXPECT_FALSE(Has(KeyState::kPending, "web1"));
}

TEST_F(KeyAdminTest, AcceptNeedsAPendingKey) {
  ASSERT_TRUE(store_->Write(KeyState::kRejected, "web1", kPem).ok());
  Status status = Accept(*store_, "web1");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Has(KeyState::kRejected, "web1"));
  EXPECT_FALSE(Has(KeyState::kAccepted, "web1"));
}

TEST_F(KeyAdminTest, RejectMovesPendingToRejected) {
  ASSERT_TRUE(store_->Write(KeyState::kPending, "web1", kPem).ok());
  ASSERT_TRUE(Reject(*store_, "web1").ok());
  EXPECT_EQ(store_->Read(KeyState::kRejected, "web1").value(), kPem);
  EXPECT_FALSE(Has(KeyState::kPending, "web1"));
}

TEST_F(KeyAdminTest, RejectNeedsAPendingKey) {
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web1", kPem).ok());
  Status status = Reject(*store_, "web1");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Has(KeyState::kAccepted, "web1"));
}

TEST_F(KeyAdminTest, DeleteRemovesEveryState) {
  for (KeyState state :
       {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied}) {
    ASSERT_TRUE(store_->Write(state, "web1", kPem).ok());
  }
  ASSERT_TRUE(store_->Write(KeyState::kAccepted, "web2", kPem).ok());
  ASSERT_TRUE(Delete(*store_, "web1").ok());
  for (KeyState state :
       {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied}) {
    EXPECT_FALSE(Has(state, "web1"));
  }
  EXPECT_TRUE(Has(KeyState::kAccepted, "web2"));
  Status again = Delete(*store_, "web1");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
}

TEST_F(KeyAdminTest, InvalidIdIsInvalidArgument) {
  EXPECT_EQ(Accept(*store_, "../x").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Reject(*store_, "a/b").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Delete(*store_, "").error().code, ErrorCode::kInvalidArgument);
}

TEST_F(KeyAdminTest, FingerprintMatchesSaltPemFinger) {
  auto pem = ReadFile(fs::path(HALITE_TEST_DATA_DIR) / "vectors" / "key_minion.pem");
  ASSERT_TRUE(pem.ok());
  const std::string pub = wire::RsaPrivateKey::FromPem(*pem)->PublicKey().ToPem();
  // salt.utils.crypt.pem_finger(path) of the minion.pub file, computed with Python.
  constexpr std::string_view kExpected =
      "72:2f:f4:31:75:13:52:78:59:15:44:7b:e2:af:3a:0e:a1:cc:63:a9:21:2c:be:47:4b:e9:ad:14:14:"
      "1b:e6:32";
  EXPECT_EQ(Fingerprint(pub).value(), kExpected);
  // The file as the master stores it (clean_key, no trailing newline) gives the same print,
  // and so do blank lines.
  EXPECT_EQ(Fingerprint(wire::CleanKey(pub)).value(), kExpected);
  EXPECT_EQ(Fingerprint("\n" + pub + "\n\n").value(), kExpected);
}

TEST_F(KeyAdminTest, FingerprintOfNonPemIsInvalidArgument) {
  EXPECT_EQ(Fingerprint("").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Fingerprint("-----BEGIN-----\n-----END-----").error().code,
            ErrorCode::kInvalidArgument);
}

TEST_F(KeyAdminTest, DropFileRoundTrip) {
  ASSERT_TRUE(WriteDropFile(cachedir_, "master-1").ok());
  const fs::path dfn = cachedir_ / ".dfn";
  EXPECT_EQ(ReadFile(dfn).value(), "master-1");
  EXPECT_EQ(ModeOf(dfn), 0400u);
  EXPECT_EQ(std::distance(fs::directory_iterator(cachedir_), fs::directory_iterator()), 1);

  EXPECT_FALSE(ConsumeDropFile(cachedir_, "master-2").value());  // another master's request
  EXPECT_TRUE(fs::exists(dfn));
  EXPECT_TRUE(ConsumeDropFile(cachedir_, "master-1").value());
  EXPECT_FALSE(fs::exists(dfn));
  EXPECT_FALSE(ConsumeDropFile(cachedir_, "master-1").value());
}

TEST_F(KeyAdminTest, WriteDropFileIsANoOpWhenOneExists) {
  ASSERT_TRUE(WriteDropFile(cachedir_, "master-1").ok());
  ASSERT_TRUE(WriteDropFile(cachedir_, "master-2").ok());
  EXPECT_EQ(ReadFile(cachedir_ / ".dfn").value(), "master-1");
}

TEST_F(KeyAdminTest, DropFileWithWrongModeIsIgnored) {
  const fs::path dfn = cachedir_ / ".dfn";
  ASSERT_TRUE(WriteFileAtomic(dfn, "master-1", 0600).ok());
  EXPECT_FALSE(ConsumeDropFile(cachedir_, "master-1").value());
  EXPECT_TRUE(fs::exists(dfn));
}

}  // namespace
}  // namespace halite::keys
