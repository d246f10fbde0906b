#include "halite/keys/key_store.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace halite::keys {
namespace {

TEST(KeyStoreTest, KeyStateDirNames) {
  EXPECT_EQ(KeyStateDir(KeyState::kAccepted), "minions");
  EXPECT_EQ(KeyStateDir(KeyState::kPending), "minions_pre");
  EXPECT_EQ(KeyStateDir(KeyState::kRejected), "minions_rejected");
  EXPECT_EQ(KeyStateDir(KeyState::kDenied), "minions_denied");
}

TEST(KeyStoreTest, ValidMinionIdFollowsSalt) {
  EXPECT_TRUE(ValidMinionId("web1.example.com"));
  EXPECT_TRUE(ValidMinionId("..x"));
  EXPECT_TRUE(ValidMinionId(std::string(255, 'a')));
  EXPECT_FALSE(ValidMinionId(std::string(256, 'a')));
  EXPECT_FALSE(ValidMinionId(""));
  EXPECT_FALSE(ValidMinionId("."));
  // Control bytes would carry newlines and terminal escapes into logs and listings.
  EXPECT_FALSE(ValidMinionId("web1\nAccepted Keys:"));
  EXPECT_FALSE(ValidMinionId("web1\x1b[2J"));
  EXPECT_FALSE(ValidMinionId("tab\tid"));
  EXPECT_FALSE(ValidMinionId("del\x7f"));
  EXPECT_TRUE(ValidMinionId("caf\xc3\xa9"));  // UTF-8 is fine
  EXPECT_FALSE(ValidMinionId(".."));
  EXPECT_FALSE(ValidMinionId("a/b"));
  EXPECT_FALSE(ValidMinionId("a\\b"));
  EXPECT_FALSE(ValidMinionId(std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace halite::keys
