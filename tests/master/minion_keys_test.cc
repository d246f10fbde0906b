// MinionKeys: the parsed-key cache behind every sign-in and v3 request.
#include "halite/master/minion_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "halite/keys/fs_key_store.h"
#include "halite/wire/rsa.h"
#include "scratch_dir.h"

namespace halite::master {
namespace {

using keys::KeyState;

// A few real key pairs, made once for the suite (RSA key generation is slow under asan).
const std::vector<wire::RsaPrivateKey>& Pairs() {
  static const auto* pairs = [] {
    auto* v = new std::vector<wire::RsaPrivateKey>();
    for (int i = 0; i < 3; ++i) v->push_back(wire::RsaPrivateKey::Generate(2048).value());
    return v;
  }();
  return *pairs;
}
std::string Pem(int i) { return Pairs()[i].PublicKey().ToPem(); }

class MinionKeysTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = keys::FsKeyStore::Open(dir_.path() / "pki").value(); }
  void Accept(const std::string& id, const std::string& pem) {
    ASSERT_TRUE(store_->Write(KeyState::kAccepted, id, pem).ok());
  }

  testing::ScratchDir dir_{"halite-minion-keys"};
  std::unique_ptr<keys::FsKeyStore> store_;
};

TEST_F(MinionKeysTest, AKeyFileIsParsedOncePerVersion) {
  MinionKeys keys(*store_);
  Accept("web1", Pem(0));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(0));
  EXPECT_EQ(keys.ParsesForTest(), 1u);
  // A different key in a new file: its stamp changed, so it is read and parsed again.
  Accept("web1", Pem(1));
  EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(1));
  EXPECT_EQ(keys.ParsesForTest(), 2u);
  // The same text rewritten (a new inode): read again, but the parsed key stands.
  Accept("web1", Pem(1));
  EXPECT_EQ(keys.Lookup("web1").value().stamp, store_->Stamp(KeyState::kAccepted, "web1").value());
  EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(1));
  EXPECT_EQ(keys.ParsesForTest(), 2u);
}

TEST_F(MinionKeysTest, ASignInParsesItsKeyOnceForTheDecisionAndTheReply) {
  MinionKeys keys(*store_);
  // What HandleAuth does for a new minion: DecideAuth parses `pub` (twice: before writing it
  // and after), then the reply needs the accepted key.
  ASSERT_TRUE(keys.Parse("web1", Pem(0)).ok());
  Accept("web1", Pem(0));
  ASSERT_TRUE(keys.Parse("web1", Pem(0)).ok());
  auto accepted = keys.Lookup("web1");
  ASSERT_TRUE(accepted.ok());
  EXPECT_EQ(accepted->key.ToPem(), Pem(0));
  EXPECT_EQ(keys.ParsesForTest(), 1u);
}

TEST_F(MinionKeysTest, TextParsedButNotOnDiskIsNotTrustedAsTheAcceptedKey) {
  MinionKeys keys(*store_);
  Accept("web1", Pem(0));
  // Someone sends another key for web1: it is parsed (to be refused or denied), but the
  // accepted key is still the file's.
  ASSERT_TRUE(keys.Parse("web1", Pem(1)).ok());
  EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(0));
  // And once the file's key is cached, other text does not displace it.
  ASSERT_TRUE(keys.Parse("web1", Pem(2)).ok());
  EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(0));
}

TEST_F(MinionKeysTest, ADeletedKeyIsNotFoundAndLeavesTheCache) {
  MinionKeys keys(*store_);
  Accept("web1", Pem(0));
  ASSERT_TRUE(keys.Get("web1").ok());
  EXPECT_EQ(keys.SizeForTest(), 1u);
  ASSERT_TRUE(store_->Remove(KeyState::kAccepted, "web1").ok());
  EXPECT_EQ(keys.Get("web1").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(keys.VerifyToken("web1", Pairs()[0].X931Sign("salt").value()).error().code,
            ErrorCode::kNotFound);
  EXPECT_EQ(keys.SizeForTest(), 0u);
}

TEST_F(MinionKeysTest, ACorruptAcceptedKeyIsDataLoss) {
  MinionKeys keys(*store_);
  Accept("web1", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
  EXPECT_EQ(keys.Get("web1").error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(keys.SizeForTest(), 0u);
}

TEST_F(MinionKeysTest, TheCacheHoldsAtMostItsCapacity) {
  MinionKeys keys(*store_, /*capacity=*/2);
  for (int i = 0; i < 5; ++i) Accept("m" + std::to_string(i), Pem(i % 3));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(keys.Get("m" + std::to_string(i)).value().ToPem(), Pem(i % 3));
      EXPECT_LE(keys.SizeForTest(), 2u);
    }
  }
  // Every Get of the second round missed (least recently used goes first): 10 parses.
  EXPECT_EQ(keys.ParsesForTest(), 10u);
  // The two most recent stay cached.
  EXPECT_TRUE(keys.Get("m4").ok());
  EXPECT_TRUE(keys.Get("m3").ok());
  EXPECT_EQ(keys.ParsesForTest(), 10u);
}

TEST_F(MinionKeysTest, KeysSentForIdsWithoutAKeyFileTakeABoundedPartOfTheCache) {
  MinionKeys keys(*store_, /*capacity=*/100, /*max_unconfirmed=*/2);
  // Strangers' sign-ins (pending, never accepted): parsed, but only two are remembered.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(keys.Parse("stranger" + std::to_string(i), Pem(0)).ok());
  EXPECT_EQ(keys.SizeForTest(), 2u);
  EXPECT_EQ(keys.UnconfirmedForTest(), 2u);
  // Once a key file holds the text, the entry is confirmed and room is made.
  Accept("stranger0", Pem(0));
  ASSERT_TRUE(keys.Get("stranger0").ok());
  EXPECT_EQ(keys.UnconfirmedForTest(), 1u);
  ASSERT_TRUE(keys.Parse("web1", Pem(1)).ok());
  EXPECT_EQ(keys.UnconfirmedForTest(), 2u);
  Accept("web1", Pem(1));
  const std::size_t parses = keys.ParsesForTest();
  EXPECT_EQ(keys.Get("web1").value().ToPem(), Pem(1));
  EXPECT_EQ(keys.ParsesForTest(), parses);  // the remembered parse was used
  EXPECT_EQ(keys.UnconfirmedForTest(), 1u);
}

TEST_F(MinionKeysTest, ATokenIsVerifiedOncePerKeyFile) {
  MinionKeys keys(*store_);
  Accept("web1", Pem(0));
  const std::string tok = Pairs()[0].X931Sign("salt").value();
  const auto before = wire::RsaOperationsSoFar().public_ops;
  EXPECT_TRUE(keys.VerifyToken("web1", tok).ok());
  EXPECT_TRUE(keys.VerifyToken("web1", tok).ok());
  EXPECT_EQ(wire::RsaOperationsSoFar().public_ops - before, 1u);
  EXPECT_EQ(keys.VerifyToken("web1", Pairs()[1].X931Sign("salt").value()).error().code,
            ErrorCode::kUnauthenticated);
  // Another key in the file: the old token no longer verifies.
  Accept("web1", Pem(1));
  EXPECT_EQ(keys.VerifyToken("web1", tok).error().code, ErrorCode::kUnauthenticated);
}

}  // namespace
}  // namespace halite::master
