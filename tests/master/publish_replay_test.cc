#include "halite/master/publish_replay.h"

#include <gtest/gtest.h>

namespace halite::master {
namespace {

using namespace std::chrono_literals;
using wire::Value;
using Clock = PublishReplay::Clock;

Value Load(const std::string& jid, std::optional<int> to = std::nullopt) {
  Value v = Value::MapOf({{"fun", "test.ping"}, {"jid", jid}, {"tgt", "*"}});
  if (to) v.Set("to", static_cast<long long>(*to));  // NOLINT
  return v;
}

std::vector<std::string> Jids(const std::vector<Value>& loads) {
  std::vector<std::string> out;
  for (const Value& l : loads) out.push_back(*l.FindStr("jid"));
  return out;
}

PublishReplayOptions Options() {
  PublishReplayOptions o;
  o.default_window = 5s;
  o.max_window = 60s;
  o.debounce = 200ms;
  return o;
}

TEST(PublishReplayTest, ASubscriberGetsTheLiveJobsAfterTheDebounce) {
  PublishReplay replay(Options());
  const Clock::time_point t0{};
  replay.Remember(Load("1"), t0);
  replay.Remember(Load("2", 30), t0 + 1s);
  auto at = replay.OnSubscriber(t0 + 2s);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, t0 + 2s + 200ms);
  EXPECT_EQ(Jids(replay.TakeReplay(*at)), (std::vector<std::string>{"1", "2"}));
}

TEST(PublishReplayTest, JobsPastTheirTimeoutAreNotReplayed) {
  PublishReplay replay(Options());
  const Clock::time_point t0{};
  replay.Remember(Load("default"), t0);  // 5 s
  replay.Remember(Load("long", 20), t0);
  replay.Remember(Load("huge", 3600), t0);  // capped at 60 s
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 5s)), (std::vector<std::string>{"long", "huge"}));
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 20s)), (std::vector<std::string>{"huge"}));
  EXPECT_TRUE(replay.TakeReplay(t0 + 60s).empty());
  EXPECT_EQ(replay.kept(), 0u);
  EXPECT_FALSE(replay.OnSubscriber(t0 + 61s).has_value());  // nothing live: no replay
}

TEST(PublishReplayTest, AReconnectBurstCostsOneReplayPerDebounce) {
  PublishReplay replay(Options());
  const Clock::time_point t0{};
  replay.Remember(Load("1", 60), t0);
  auto first = replay.OnSubscriber(t0 + 1s);
  ASSERT_TRUE(first.has_value());
  for (int i = 1; i < 500; ++i) {
    EXPECT_FALSE(replay.OnSubscriber(t0 + 1s + std::chrono::microseconds(i * 100)).has_value());
  }
  EXPECT_EQ(replay.TakeReplay(*first).size(), 1u);
  // The next subscriber after a replay starts the next round.
  auto second = replay.OnSubscriber(*first + 10ms);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, *first + 210ms);
}

TEST(PublishReplayTest, TheSameJidIsKeptOnceAndMemoryIsBounded) {
  PublishReplayOptions o = Options();
  o.max_jobs = 3;
  PublishReplay replay(o);
  const Clock::time_point t0{};
  replay.Remember(Load("1", 60), t0);
  replay.Remember(Load("1", 60), t0 + 1ms);
  EXPECT_EQ(replay.kept(), 1u);
  for (const char* jid : {"2", "3", "4"}) replay.Remember(Load(jid, 60), t0 + 2ms);
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 3ms)), (std::vector<std::string>{"2", "3", "4"}));

  o.max_jobs = 100;
  o.max_bytes = 2 * wire::Pack(Load("a", 60)).size();
  PublishReplay small(o);
  for (const char* jid : {"a", "b", "c"}) small.Remember(Load(jid, 60), t0);
  EXPECT_EQ(Jids(small.TakeReplay(t0)), (std::vector<std::string>{"b", "c"}));
  EXPECT_LE(small.kept_bytes(), o.max_bytes);
  small.Remember(Value::MapOf({{"fun", "x"}}), t0);  // no jid: not kept
  EXPECT_EQ(small.kept(), 2u);
}

}  // namespace
}  // namespace halite::master
