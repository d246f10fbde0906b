// SessionKeys: the memory backend of a single master and the file backend of a cluster.
#include "halite/master/session_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "scratch_dir.h"

namespace halite::master {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const keys::FileStamp kStamp{1, 2, 3, 4};
const keys::FileStamp kOtherStamp{1, 5, 3, 4};  // another inode: the key was re-accepted

TEST(MemorySessionKeysTest, AMinionKeepsItsKeyWhileItsKeyFileStays) {
  auto keys = MakeMemorySessionKeys(hours(24), 100);
  CrypticlePtr first = keys->Get("web1", kStamp).value();
  EXPECT_EQ(keys->Get("web1", kStamp).value()->key_string(), first->key_string());
  EXPECT_NE(keys->Get("db1", kStamp).value()->key_string(), first->key_string());
  // A request that did not decrypt does not end the session (Forget is for shared files).
  keys->Forget("web1");
  EXPECT_EQ(keys->Get("web1", kStamp).value()->key_string(), first->key_string());
}

TEST(MemorySessionKeysTest, AReacceptedKeyGetsANewSession) {
  auto keys = MakeMemorySessionKeys(hours(24), 100);
  const std::string first = keys->Get("web1", kStamp).value()->key_string();
  const std::string second = keys->Get("web1", kOtherStamp).value()->key_string();
  EXPECT_NE(second, first);
  EXPECT_EQ(keys->Get("web1", kOtherStamp).value()->key_string(), second);
}

TEST(MemorySessionKeysTest, AnExpiredKeyIsRenewed) {
  auto keys = MakeMemorySessionKeys(seconds(0), 100);
  const std::string first = keys->Get("web1", kStamp).value()->key_string();
  EXPECT_NE(keys->Get("web1", kStamp).value()->key_string(), first);
}

TEST(MemorySessionKeysTest, NoFileIsWrittenAndTheCountIsBounded) {
  testing::ScratchDir dir("halite-sessions");
  auto keys = MakeMemorySessionKeys(hours(24), 3);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(keys->Get("m" + std::to_string(i), kStamp).ok());
    EXPECT_LE(keys->SizeForTest(), 3u);
  }
  EXPECT_EQ(keys->SizeForTest(), 3u);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(MemorySessionKeysTest, ASessionFileLeftBySaltMasterIsTakenOverButNeverWritten) {
  testing::ScratchDir dir("halite-sessions");
  const std::filesystem::path sessions = dir.path() / "sessions";
  auto writer = MakeFileSessionKeys(sessions, hours(24));  // as salt-master left it
  const std::string left = writer->Get("web1", kStamp).value()->key_string();
  auto keys = MakeMemorySessionKeys(hours(24), 100, sessions);
  EXPECT_EQ(keys->Get("web1", kStamp).value()->key_string(), left);
  ASSERT_TRUE(keys->Get("db1", kStamp).ok());
  EXPECT_FALSE(std::filesystem::exists(sessions / "db1"));
  // An expired file is not taken over.
  auto short_lived = MakeMemorySessionKeys(seconds(0), 100, sessions);
  EXPECT_NE(short_lived->Get("web1", kStamp).value()->key_string(), left);
}

TEST(FileSessionKeysTest, MastersSharingTheDirectoryAgree) {
  testing::ScratchDir dir("halite-sessions");
  auto one = MakeFileSessionKeys(dir.path() / "sessions", hours(24));
  auto two = MakeFileSessionKeys(dir.path() / "sessions", hours(24));
  const std::string key = one->Get("web1", kStamp).value()->key_string();
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / "sessions" / "web1"));
  EXPECT_EQ(two->Get("web1", kStamp).value()->key_string(), key);
  // halite-key -d removes the file: the cached key ends with it.
  std::filesystem::remove(dir.path() / "sessions" / "web1");
  EXPECT_NE(one->Get("web1", kStamp).value()->key_string(), key);
}

}  // namespace
}  // namespace halite::master
