// publisher_acl's pure parts and the key files, with expectations read off salt/acl
// (PublisherACL), salt/utils/master.py get_values_of_matching_keys and salt/daemons/masterapi.py
// access_keys / mk_key.
#include "halite/auth/publisher_acl.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halite/config/yaml.h"
#include "halite/keys/fs.h"
#include "scratch_dir.h"

namespace halite::auth {
namespace {

wire::Value Yaml(const std::string& text) {
  auto node = config::ParseYaml(text);
  EXPECT_TRUE(node.ok());
  return AclYamlToValue(*node);
}

TEST(PublisherAclRulesTest, BlacklistUsersAndModulesAreGlobsOrFullRegexes) {
  const wire::Value bl = Yaml("{users: ['ops_.*', 'guest'], modules: ['cmd.*', 'test\\.arg']}");
  EXPECT_TRUE(UserBlacklisted(bl, "guest"));
  EXPECT_TRUE(UserBlacklisted(bl, "ops_alice"));
  EXPECT_FALSE(UserBlacklisted(bl, "guest2"));  // a full match, not a prefix
  EXPECT_FALSE(UserBlacklisted(bl, "alice"));
  EXPECT_TRUE(FunBlacklisted(bl, wire::Value("cmd.run")));
  EXPECT_TRUE(FunBlacklisted(bl, wire::Value("test.arg")));
  EXPECT_FALSE(FunBlacklisted(bl, wire::Value("test.args")));
  EXPECT_FALSE(FunBlacklisted(bl, wire::Value("test.ping")));
  // A multi-function job: any one blacklisted function refuses it.
  EXPECT_TRUE(FunBlacklisted(bl, Yaml("['test.ping', 'cmd.run']")));
  // One string instead of a list; no blacklist at all.
  EXPECT_TRUE(UserBlacklisted(Yaml("{users: guest}"), "guest"));
  EXPECT_FALSE(UserBlacklisted(wire::Value::EmptyMap(), "root"));
  EXPECT_FALSE(FunBlacklisted(wire::Value::EmptyMap(), wire::Value("cmd.run")));
}

TEST(PublisherAclRulesTest, AUsersListIsEveryMatchingEntryInOrder) {
  const wire::Value acl =
      Yaml("{fred: ['test.*'], 'admin|manager_.*': ['saltutil.*'], 'f*': [{'web*': ['pkg.*']}]}");
  EXPECT_EQ(wire::Value(PublisherAuthList(acl, "fred")), Yaml("['test.*', {'web*': ['pkg.*']}]"));
  EXPECT_EQ(wire::Value(PublisherAuthList(acl, "manager_bob")), Yaml("['saltutil.*']"));
  EXPECT_EQ(wire::Value(PublisherAuthList(acl, "admin")), Yaml("['saltutil.*']"));
  EXPECT_TRUE(PublisherAuthList(acl, "bob").empty());
}

TEST(PublisherAclRulesTest, KeysAreWrittenOnceForUsersWhoExistReadableByThemAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
  testing::ScratchDir dir("publisher-acl");
  AuthOptions options;
  options.publisher_acl =
      Yaml("{nobody: ['test.*'], no_such_user_x: ['.*'], 'admin|manager_.*': ['.*'], root: []}");
  auto keys = PrepareUserKeys(options, dir.path());
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  ASSERT_EQ(keys->size(), 1u);
  ASSERT_TRUE(keys->count("nobody"));
  const auto file = dir.path() / ".nobody_key";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0400u);
  EXPECT_EQ(st.st_uid, ::getpwnam("nobody")->pw_uid);
  EXPECT_EQ(*keys::ReadFile(file), keys->at("nobody"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / ".no_such_user_x_key"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / ".root_key"));
  // A second start (another master on the shared cachedir) keeps the key.
  auto again = PrepareUserKeys(options, dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at("nobody"), keys->at("nobody"));
  // Without client_acl_verify a named user who does not exist gets one too (Salt's mk_key).
  options.client_acl_verify = false;
  auto unverified = PrepareUserKeys(options, dir.path());
  ASSERT_TRUE(unverified.ok());
  EXPECT_TRUE(unverified->count("no_such_user_x"));
  // Nothing configured: no keys.
  auto none = PrepareUserKeys(AuthOptions{}, dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace halite::auth
