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
  o.grace = 0s;
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
  // The next subscriber after a replay starts the next round, which waits twice as long.
  auto second = replay.OnSubscriber(*first + 10ms);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, *first + 410ms);
}

// Anyone can subscribe on 4505, and a round sends every live job to every minion: a stranger's
// frame right after each round made a round every 200 ms. Rounds back off to max_interval, and
// start at the debounce again only after max_interval without one.
TEST(PublishReplayTest, RoundsThatFollowOneAnotherBackOffToMaxInterval) {
  PublishReplay replay(Options());  // debounce 200 ms, max_interval 5 s
  const Clock::time_point t0{};
  replay.Remember(Load("1", 600), t0);
  Clock::time_point now = t0;
  std::vector<long long> waits;
  for (int i = 0; i < 8; ++i) {
    auto at = replay.OnSubscriber(now);
    ASSERT_TRUE(at.has_value());
    waits.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(*at - now).count());
    EXPECT_EQ(replay.TakeReplay(*at).size(), 1u);
    now = *at + 1ms;  // the stranger's next frame, just after the round
  }
  EXPECT_EQ(waits, (std::vector<long long>{200, 400, 800, 1600, 3200, 5000, 5000, 5000}));
  // Quiet for longer than max_interval: the next reconnect burst is served at the debounce.
  auto later = replay.OnSubscriber(now + 5s);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(*later, now + 5s + 200ms);
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

TEST(PublishReplayTest, TheGraceExtendsEveryWindowUpToTheCap) {
  PublishReplayOptions o = Options();
  o.grace = 30s;
  PublishReplay replay(o);
  const Clock::time_point t0{};
  replay.Remember(Load("default"), t0);     // 5 s + 30 s
  replay.Remember(Load("long", 20), t0);    // 50 s
  replay.Remember(Load("huge", 3600), t0);  // capped at 60 s
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 34s)),
            (std::vector<std::string>{"default", "long", "huge"}));
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 35s)), (std::vector<std::string>{"long", "huge"}));
  EXPECT_EQ(Jids(replay.TakeReplay(t0 + 50s)), (std::vector<std::string>{"huge"}));
  EXPECT_TRUE(replay.TakeReplay(t0 + 60s).empty());
}

// A minion that returned is left out of later replays, so one that restarted since (its jid
// queue is gone) does not run a finished job again.
TEST(PublishReplayTest, AReplayLeavesOutTheMinionsThatReturned) {
  PublishReplay replay(Options());
  const Clock::time_point t0{};
  replay.Remember(Load("1", 60), t0);
  replay.Remember(Load("2", 60), t0);
  replay.Returned("1", "web1");
  replay.Returned("1", "db 2");  // cannot be listed in a compound target: stays in
  replay.Returned("1", "web3");
  replay.Returned("1", "web1");  // twice: once
  replay.Returned("9", "web1");  // unknown jid: ignored
  auto loads = replay.TakeReplay(t0 + 1s);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(*loads[0].FindStr("tgt"), "( * ) and not L@web1,web3");
  EXPECT_EQ(*loads[0].FindStr("tgt_type"), "compound");
  EXPECT_EQ(*loads[1].FindStr("tgt"), "*");  // nobody returned job 2
  EXPECT_EQ(loads[1].FindStr("tgt_type"), nullptr);
  // The ids count against the memory bound.
  EXPECT_GT(replay.kept_bytes(), 2 * wire::Pack(Load("1", 60)).size());
}

Value Target(Value tgt, const std::string& type) {
  Value v = Value::MapOf({{"jid", "1"}, {"tgt", std::move(tgt)}});
  if (!type.empty()) v.Set("tgt_type", type);
  return v;
}

TEST(PublishReplayTest, EveryTargetTypeAMinionMatchesBecomesACompoundTerm) {
  const std::set<std::string, std::less<>> done{"a", "b"};
  auto ex = [&](Value load) { return TargetExcluding(load, done).value_or("<none>"); };
  EXPECT_EQ(ex(Target(Value("web*"), "")), "( web* ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("web*"), "glob")), "( web* ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("web[0-9]+"), "pcre")), "( E@web[0-9]+ ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("os:Debian"), "grain")), "( G@os:Debian ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("os:Deb.*"), "grain_pcre")), "( P@os:Deb.* ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("role:web"), "pillar")), "( I@role:web ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("role:w.*"), "pillar_pcre")), "( J@role:w.* ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("10.0.0.0/8"), "ipcidr")), "( S@10.0.0.0/8 ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("G@os:Debian and web*"), "compound")),
            "( ( G@os:Debian and web* ) ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value(wire::Array{Value("a"), Value("c")}), "list")),
            "( L@a,c ) and not L@a,b");
  EXPECT_EQ(ex(Target(Value("a, c d"), "list")), "( L@a,c,d ) and not L@a,b");
  // What cannot be written as a compound term is replayed as it was.
  EXPECT_EQ(ex(Target(Value("web"), "nodegroup")), "<none>");
  EXPECT_EQ(ex(Target(Value("web one"), "glob")), "<none>");
  EXPECT_EQ(ex(Target(Value("G@x"), "glob")), "<none>");
  EXPECT_EQ(ex(Target(Value("not"), "glob")), "<none>");
  EXPECT_EQ(ex(Target(Value(wire::Array{Value("a,b")}), "list")), "<none>");
  Value custom = Target(Value("os|Debian"), "grain");
  custom.Set("delimiter", "|");
  EXPECT_EQ(ex(custom), "<none>");
  EXPECT_FALSE(TargetExcluding(Target(Value("*"), ""), {"x y", "(z)"}).has_value());
}

}  // namespace
}  // namespace halite::master
