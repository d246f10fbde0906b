#include "halite/master/auth_replies.h"

#include <gtest/gtest.h>

namespace halite::master {
namespace {

using namespace std::chrono_literals;
using Clock = AuthReplies::Clock;

AuthReplies::Basis BasisOf(std::string aes) {
  AuthReplies::Basis b;
  b.key_stamp.ino = 7;
  b.aes_key = std::move(aes);
  b.session_key = "session";
  return b;
}

TEST(AuthRepliesTest, AnAnswerIsFoundByItsRequestWithTheBasisItWasMadeOn) {
  AuthReplies replies(1 << 20, 60s);
  const auto t0 = Clock::now();
  const std::string web = AuthReplies::Digest("web1", 3, "load");
  replies.Put(web, BasisOf("aes1"), "answer", t0);
  auto kept = replies.Find(web, t0 + 1s);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->reply, "answer");
  EXPECT_EQ(kept->basis, BasisOf("aes1"));
  EXPECT_FALSE(kept->basis == BasisOf("aes2"));
  // Another id, version or load is another request.
  EXPECT_FALSE(replies.Find(AuthReplies::Digest("web2", 3, "load"), t0).has_value());
  EXPECT_FALSE(replies.Find(AuthReplies::Digest("web1", 2, "load"), t0).has_value());
  EXPECT_FALSE(replies.Find(AuthReplies::Digest("web1", 3, "load2"), t0).has_value());
  replies.Drop(web);
  EXPECT_FALSE(replies.Find(web, t0).has_value());
  EXPECT_EQ(replies.size(), 0u);
  EXPECT_EQ(replies.bytes(), 0u);
}

TEST(AuthRepliesTest, AnswersExpireByAge) {
  AuthReplies replies(1 << 20, 60s);
  const auto t0 = Clock::now();
  replies.Put("a", BasisOf("k"), "A", t0);
  replies.Put("b", BasisOf("k"), "B", t0 + 30s);
  EXPECT_TRUE(replies.Find("a", t0 + 59s).has_value());
  EXPECT_FALSE(replies.Find("a", t0 + 60s).has_value());
  EXPECT_TRUE(replies.Find("b", t0 + 60s).has_value());
  EXPECT_EQ(replies.size(), 1u);
}

TEST(AuthRepliesTest, TheByteBoundPushesTheOldestOut) {
  const std::string answer(1000, 'x');
  AuthReplies replies(10'000, 60s);
  const auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) {
    replies.Put("digest" + std::to_string(i), BasisOf("k"), answer, t0 + i * 1ms);
    EXPECT_LE(replies.bytes(), 10'000u);
  }
  EXPECT_LT(replies.size(), 10u);
  EXPECT_GT(replies.size(), 5u);
  EXPECT_TRUE(replies.Find("digest99", t0 + 100ms).has_value());
  EXPECT_FALSE(replies.Find("digest0", t0 + 100ms).has_value());
  // An answer larger than the whole bound is not kept.
  replies.Put("huge", BasisOf("k"), std::string(20'000, 'y'), t0 + 200ms);
  EXPECT_FALSE(replies.Find("huge", t0 + 200ms).has_value());
}

TEST(AuthRepliesTest, PuttingTheSameRequestAgainKeepsOneEntryWithItsOwnAge) {
  AuthReplies replies(1 << 20, 60s);
  const auto t0 = Clock::now();
  replies.Put("a", BasisOf("k1"), "first", t0);
  replies.Put("a", BasisOf("k2"), "second", t0 + 50s);
  EXPECT_EQ(replies.size(), 1u);
  // The first Put's slot expiring does not take the second entry with it.
  auto kept = replies.Find("a", t0 + 70s);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->reply, "second");
  EXPECT_FALSE(replies.Find("a", t0 + 110s).has_value());
  EXPECT_EQ(replies.bytes(), 0u);
}

}  // namespace
}  // namespace halite::master
