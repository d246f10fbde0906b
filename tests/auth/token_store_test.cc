#include "halite/auth/token_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "halite/keys/fs.h"
#include "scratch_dir.h"

namespace halite::auth {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Token Alice(double expire_in) {
  Token t;
  t.name = "alice";
  t.eauth = "pam";
  t.start = Now();
  t.expire = Now() + expire_in;
  t.groups = {"ops", "dev"};
  return t;
}

TEST(TokenStoreTest, AMintedTokenIsReadBackByAnotherStoreOnTheSameDirectory) {
  testing::ScratchDir dir;
  auto a = MakeLocalFsTokenStore(dir.path() / "tokens");
  auto b = MakeLocalFsTokenStore(dir.path() / "tokens");  // a second master
  ASSERT_TRUE(a.ok() && b.ok());
  auto minted = (*a)->Mint(Alice(3600));
  ASSERT_TRUE(minted.ok()) << minted.error().message;
  EXPECT_EQ(minted->token.size(), 64u);
  EXPECT_TRUE(ValidTokenName(minted->token));
  auto read = (*b)->Get(minted->token);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->name, "alice");
  EXPECT_EQ(read->eauth, "pam");
  EXPECT_EQ(read->groups, (std::vector<std::string>{"ops", "dev"}));
  EXPECT_DOUBLE_EQ(read->expire, minted->expire);
}

TEST(TokenStoreTest, TheFileIsSaltsPayloadWithMode0600) {
  testing::ScratchDir dir;
  auto store = MakeLocalFsTokenStore(dir.path() / "tokens");
  ASSERT_TRUE(store.ok());
  auto minted = (*store)->Mint(Alice(60));
  ASSERT_TRUE(minted.ok());
  const auto path = dir.path() / "tokens" / minted->token;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  struct stat dst {};
  ASSERT_EQ(::stat((dir.path() / "tokens").c_str(), &dst), 0);
  EXPECT_EQ(dst.st_mode & 0777, 0700u);
  auto bytes = keys::ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  auto value = wire::Unpack(*bytes);
  ASSERT_TRUE(value.ok());
  // salt.auth.LoadAuth.mk_token's keys, as localfs stores them.
  for (const char* key : {"start", "expire", "name", "eauth", "groups", "token"}) {
    EXPECT_NE(value->Find(key), nullptr) << key;
  }
  EXPECT_TRUE(value->Find("expire")->is_float());
  EXPECT_EQ(*value->FindStr("token"), minted->token);
}

TEST(TokenStoreTest, ForgedNamesAreRefusedWithoutTouchingTheDisk) {
  testing::ScratchDir dir;
  auto store = MakeLocalFsTokenStore(dir.path() / "tokens");
  ASSERT_TRUE(store.ok());
  // A file outside the store that a path-walking name would reach.
  ASSERT_TRUE(
      keys::WriteFileAtomic(dir.path() / "x", wire::Pack(TokenToValue(Alice(60))), 0600).ok());
  for (std::string name :
       std::vector<std::string>{"", "bad", "/etc/passwd", "../x", "..", "0a/../../x",
                                std::string(129, 'a'), std::string("ab\0cd", 5)}) {
    auto got = (*store)->Get(name);
    ASSERT_FALSE(got.ok()) << name;
    EXPECT_EQ(got.error().code, ErrorCode::kUnauthenticated) << name;
  }
  EXPECT_FALSE((*store)->Get(std::string(64, 'a')).ok());  // well-formed, unknown
}

TEST(TokenStoreTest, AnExpiredTokenIsRefusedAndRemoved) {
  testing::ScratchDir dir;
  auto store = MakeLocalFsTokenStore(dir.path() / "tokens");
  ASSERT_TRUE(store.ok());
  auto minted = (*store)->Mint(Alice(-1));
  ASSERT_TRUE(minted.ok());
  auto got = (*store)->Get(minted->token);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kUnauthenticated);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "tokens" / minted->token));
}

TEST(TokenStoreTest, ABrokenFileIsRefusedAndRemoved) {
  testing::ScratchDir dir;
  auto store = MakeLocalFsTokenStore(dir.path() / "tokens");
  ASSERT_TRUE(store.ok());
  const std::string name(64, 'b');
  ASSERT_TRUE(keys::WriteFileAtomic(dir.path() / "tokens" / name, "\xc1garbage", 0600).ok());
  EXPECT_FALSE((*store)->Get(name).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "tokens" / name));
}

TEST(TokenStoreTest, RemoveForgetsTheToken) {
  testing::ScratchDir dir;
  auto store = MakeLocalFsTokenStore(dir.path() / "tokens");
  ASSERT_TRUE(store.ok());
  auto minted = (*store)->Mint(Alice(60));
  ASSERT_TRUE(minted.ok());
  EXPECT_TRUE((*store)->Remove(minted->token).ok());
  EXPECT_FALSE((*store)->Get(minted->token).ok());
  EXPECT_FALSE((*store)->Remove(minted->token).ok());
}

}  // namespace
}  // namespace halite::auth
