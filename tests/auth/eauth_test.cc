#include "halite/auth/eauth.h"

#include <gtest/gtest.h>

#include "halite/auth/authenticator.h"
#include "halite/config/yaml.h"
#include "halite/keys/fs.h"
#include "scratch_dir.h"

namespace halite::auth {
namespace {

AuthOptions Options(const std::string& yaml, const std::filesystem::path& cachedir) {
  auto node = config::ParseYaml(yaml);
  EXPECT_TRUE(node.ok());
  auto o = ParseAuthOptions(*node, cachedir.string());
  EXPECT_TRUE(o.ok()) << (o.ok() ? "" : o.error().message);
  return *o;
}

TEST(EauthTest, FileBackendChecksPlainAndHashedPasswords) {
  testing::ScratchDir dir;
  ASSERT_TRUE(
      keys::WriteFileAtomic(dir.path() / "plain", "# users\nalice:s3cret\nbob:pw\n", 0600).ok());
  // sha256 hex of "s3cret" and "carol-pw", in the third field.
  ASSERT_TRUE(keys::WriteFileAtomic(
                  dir.path() / "hashed",
                  "alice|x|1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0\n"
                  "carol|x|a43547358f6eda1a31f352c388d9290d296e6c8e6436edce81da55e710b982f6\n",
                  0600)
                  .ok());
  auto plain = MakeFileEauth({(dir.path() / "plain").string(), "text", "plaintext", ":", 1, 2});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(*(*plain)->Authenticate("alice", "s3cret"));
  EXPECT_FALSE(*(*plain)->Authenticate("alice", "wrong"));
  EXPECT_FALSE(*(*plain)->Authenticate("mallory", "s3cret"));
  EXPECT_FALSE(*(*plain)->Authenticate("alice", ""));
  auto hashed = MakeFileEauth({(dir.path() / "hashed").string(), "text", "sha256", "|", 1, 3});
  ASSERT_TRUE(hashed.ok());
  EXPECT_TRUE(*(*hashed)->Authenticate("alice", "s3cret"));
  EXPECT_TRUE(*(*hashed)->Authenticate("carol", "carol-pw"));
  EXPECT_FALSE(*(*hashed)->Authenticate("carol", "nope"));
  EXPECT_FALSE(*(*hashed)->Authenticate(
      "alice", "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"));
}

TEST(EauthTest, FileBackendRefusesWhatItCannotRead) {
  EXPECT_FALSE(MakeFileEauth({"", "text", "plaintext", ":", 1, 2}).ok());
  EXPECT_FALSE(MakeFileEauth({"/x", "htdigest", "plaintext", ":", 1, 2}).ok());
  EXPECT_FALSE(MakeFileEauth({"/x", "text", "rot13", ":", 1, 2}).ok());
  auto missing = MakeFileEauth({"/nonexistent/halite-users", "text", "plaintext", ":", 1, 2});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE((*missing)->Authenticate("alice", "x").ok());
}

TEST(EauthTest, AutoIsRefusedUnlessEnabled) {
  testing::ScratchDir dir;
  auto off = MakeEauth("auto", Options("{}", dir.path()));
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().code, ErrorCode::kPermissionDenied);
  auto on = MakeEauth("auto", Options("halite_eauth_auto: True", dir.path()));
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(*(*on)->Authenticate("anyone", "anything"));
  EXPECT_FALSE(MakeEauth("ldap", Options("{}", dir.path())).ok());
}

TEST(EauthTest, OptionsHaveSaltsDefaults) {
  testing::ScratchDir dir;
  AuthOptions o = Options("", dir.path());
  EXPECT_EQ(o.token_expire, std::chrono::seconds(43200));
  EXPECT_EQ(o.pam_service, "login");
  EXPECT_EQ(o.token_dir, dir.path().string() + "/tokens");
  EXPECT_FALSE(o.allow_auto);
  auto bad = config::ParseYaml("token_expire: soon\nexternal_auth: [x]\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(ParseAuthOptions(*bad, "/tmp").ok());
}

TEST(EauthTest, LoginNeedsAConfiguredBackendAndTheRightPassword) {
  testing::ScratchDir dir;
  ASSERT_TRUE(keys::WriteFileAtomic(dir.path() / "users", "alice:pw\n", 0600).ok());
  auto auth = Authenticator::Open(
      Options("external_auth:\n  file:\n    ^filename: " + (dir.path() / "users").string() +
                  "\n    alice: ['test.*']\n",
              dir.path()));
  ASSERT_TRUE(auth.ok());
  auto token = (*auth)->Login("alice", "pw", "file");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->name, "alice");
  EXPECT_NEAR(token->expire - token->start, 43200, 1);
  EXPECT_TRUE((*auth)->CheckToken(token->token).ok());
  EXPECT_EQ((*auth)->AuthList(*token), (wire::Array{"test.*"}));
  EXPECT_FALSE((*auth)->Login("alice", "nope", "file").ok());
  EXPECT_FALSE((*auth)->Login("alice", "pw", "pam").ok());   // not under external_auth
  EXPECT_FALSE((*auth)->Login("alice", "pw", "auto").ok());  // not enabled
  EXPECT_TRUE((*auth)->Logout(token->token).ok());
  EXPECT_FALSE((*auth)->CheckToken(token->token).ok());
}

}  // namespace
}  // namespace halite::auth
