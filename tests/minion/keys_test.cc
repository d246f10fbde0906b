#include "halite/minion/keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.h"

namespace halite::minion {
namespace {

mode_t ModeOf(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(KeysTest, GeneratesOnceThenReloads) {
  testing::TempDir dir;
  std::filesystem::path pki = dir.path() / "pki" / "minion";
  auto first = LoadOrCreateKeys(pki, 1024);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(ModeOf(pki), 0700u);
  EXPECT_EQ(ModeOf(pki / "minion.pem"), 0400u);
  EXPECT_EQ(ModeOf(pki / "minion.pub"), 0644u);
  std::string pem = testing::ReadTestFile((pki / "minion.pem").string());
  EXPECT_EQ(pem.rfind("-----BEGIN RSA PRIVATE KEY-----", 0), 0u);
  std::string pub = testing::ReadTestFile((pki / "minion.pub").string());
  EXPECT_EQ(pub.rfind("-----BEGIN PUBLIC KEY-----", 0), 0u);
  EXPECT_EQ(first->public_pem, wire::CleanKey(pub));
  EXPECT_EQ(first->private_key.PublicKey().X931Recover(first->tok).value(), "salt");

  auto second = LoadOrCreateKeys(pki, 1024);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->public_pem, first->public_pem);
  EXPECT_EQ(second->tok, first->tok);

  std::filesystem::remove(pki / "minion.pub");
  auto third = LoadOrCreateKeys(pki, 1024);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(wire::CleanKey(testing::ReadTestFile((pki / "minion.pub").string())),
            first->public_pem);
}

TEST(KeysTest, UsesAnExistingSaltKeyAndRejectsACorruptOne) {
  testing::TempDir dir;
  std::filesystem::copy_file(testing::VectorPath("key_minion.pem"), dir.path() / "minion.pem");
  auto keys = LoadOrCreateKeys(dir.path());
  ASSERT_TRUE(keys.ok()) << keys.error().ToString();
  auto auth = testing::LoadVectors("auth.json");
  EXPECT_EQ(keys->public_pem,
            auth["first_contact"]["request_envelope"]["load"]["pub"].get<std::string>());

  testing::TempDir bad;
  std::ofstream(bad.path() / "minion.pem") << "not a key";
  auto broken = LoadOrCreateKeys(bad.path());
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code, ErrorCode::kDataLoss);
}

TEST(KeysTest, PinnedMasterKey) {
  testing::TempDir dir;
  EXPECT_FALSE(ReadPinnedMasterKey(dir.path()).value().has_value());
  ASSERT_TRUE(WritePinnedMasterKey(dir.path(), "-----BEGIN PUBLIC KEY-----\nAB\n-----END").ok());
  auto pinned = ReadPinnedMasterKey(dir.path());
  ASSERT_TRUE(pinned.ok() && pinned->has_value());
  EXPECT_EQ(**pinned, "-----BEGIN PUBLIC KEY-----\nAB\n-----END");
  EXPECT_TRUE(SameKeyText("a\nb\n", "a\r\nb"));
  EXPECT_FALSE(SameKeyText("a\nb", "a\nc"));
}

}  // namespace
}  // namespace halite::minion
