#include "halite/cluster/quorum.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scratch_dir.h"

namespace halite::cluster {
namespace {

using Ids = std::vector<std::string>;
using namespace std::chrono_literals;

QuorumView View(std::string id, Ids reachable, std::uint64_t seq = 1) {
  return QuorumView{std::move(id), seq, std::move(reachable)};
}

TEST(QuorumTest, AllConnectedEveryoneServes) {
  auto d = DecideQuorum("a", {"b", "c"}, {View("b", {"a", "c"}), View("c", {"a", "b"})});
  EXPECT_TRUE(d.serving);
  EXPECT_EQ(d.side, (Ids{"a", "b", "c"}));
  EXPECT_EQ(d.winner, d.side);
}

TEST(QuorumTest, OneMasterCutFromTwoLivePeersIsTheMinority) {
  // a reaches nobody; b and c are alive (their views move) and reach each other.
  auto a = DecideQuorum("a", {}, {View("b", {"c"}), View("c", {"b"})});
  EXPECT_FALSE(a.serving);
  EXPECT_EQ(a.side, (Ids{"a"}));
  EXPECT_EQ(a.winner, (Ids{"b", "c"}));
  EXPECT_EQ(QuorumProblem(a),
            "partitioned: this master's side (a) is cut off from (b, c), which serves; minions "
            "should move there");
  // The majority's own decision agrees.
  auto b = DecideQuorum("b", {"c"}, {View("a", {}), View("c", {"b"})});
  EXPECT_TRUE(b.serving);
  EXPECT_EQ(b.side, (Ids{"b", "c"}));
}

TEST(QuorumTest, DeadPeersAreNoSideSoTheLastSurvivorServes) {
  // b and c are not among the alive views (killed): a alone is the only side.
  auto d = DecideQuorum("a", {}, {});
  EXPECT_TRUE(d.serving);
  EXPECT_EQ(d.alive, (Ids{"a"}));
}

TEST(QuorumTest, TwoMastersCutApartTheLowerIdServes) {
  auto lo = DecideQuorum("127.0.0.2", {}, {View("127.0.0.3", {})});
  auto hi = DecideQuorum("127.0.0.3", {}, {View("127.0.0.2", {})});
  EXPECT_TRUE(lo.serving);
  EXPECT_FALSE(hi.serving);
  EXPECT_EQ(hi.winner, (Ids{"127.0.0.2"}));
}

TEST(QuorumTest, EqualSidesTheOneWithTheLowestIdServes) {
  // {a, d} and {b, c}: equal size; a < b.
  auto d = DecideQuorum("d", {"a"}, {View("a", {"d"}), View("b", {"c"}), View("c", {"b"})});
  EXPECT_TRUE(d.serving);
  auto c = DecideQuorum("c", {"b"}, {View("a", {"d"}), View("b", {"c"}), View("d", {"a"})});
  EXPECT_FALSE(c.serving);
  EXPECT_EQ(c.winner, (Ids{"a", "d"}));
}

TEST(QuorumTest, ALinkEitherSideReportsJoinsTheSides) {
  // b still reports its link to a (its link timeout has not run out): one side.
  auto d = DecideQuorum("a", {}, {View("b", {"a", "c"}), View("c", {"b"})});
  EXPECT_TRUE(d.serving);
  // A chain a-b-c with no a-c link is one side too.
  auto chain = DecideQuorum("a", {"b"}, {View("b", {"a", "c"}), View("c", {"b"})});
  EXPECT_TRUE(chain.serving);
  EXPECT_EQ(chain.side, (Ids{"a", "b", "c"}));
}

TEST(QuorumTest, ViewTextRoundTripsAndRefusesGarbage) {
  QuorumView v = View("m1", {"m2", "m3"}, 42);
  EXPECT_EQ(QuorumViewToText(v), "42 m2,m3\n");
  auto back = QuorumViewFromText("m1", QuorumViewToText(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  auto none = QuorumViewFromText("m1", "7 \n");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->reachable.empty());
  QuorumView down = View("m1", {"m2"}, 8);
  down.job_cache_ok = false;
  EXPECT_EQ(QuorumViewToText(down), "8 m2 job-cache-down\n");
  EXPECT_EQ(*QuorumViewFromText("m1", QuorumViewToText(down)), down);
  auto alone_down = QuorumViewFromText("m1", "9  job-cache-down\n");
  ASSERT_TRUE(alone_down.ok());
  EXPECT_TRUE(alone_down->reachable.empty());
  EXPECT_FALSE(alone_down->job_cache_ok);
  for (const char* bad : {"", "7", "7 a", "x a\n", "7 a,,b\n", "7 a,\n", "-1 a\n", "7 a b\n",
                          "7 a job-cache-down x\n", "7 a job-cache-up\n"}) {
    EXPECT_FALSE(QuorumViewFromText("m1", bad).ok()) << bad;
  }
}

TEST(QuorumTest, TrackerTakesAStillCounterAsADeadMasterAndWaitsOutTheGrace) {
  QuorumTracker t("a", {.stale = 5000ms, .grace = 3000ms});
  const auto t0 = std::chrono::steady_clock::now();
  auto views = [](std::uint64_t seq) {
    return std::vector<QuorumView>{View("b", {"c"}, seq), View("c", {"b"}, seq)};
  };
  // Cut: b and c alive and together; a is out, but only after the grace.
  EXPECT_TRUE(t.Observe(views(1), {}, t0).serving);
  EXPECT_TRUE(t.Observe(views(2), {}, t0 + 2s).serving);
  auto out = t.Observe(views(3), {}, t0 + 3s);
  EXPECT_FALSE(out.serving);
  EXPECT_EQ(out.winner, (Ids{"b", "c"}));
  // Healed: serving at the first round that says so.
  EXPECT_TRUE(t.Observe(views(4), {"b", "c"}, t0 + 4s).serving);
  // Cut again, then b and c die: their counters stop; after `stale` a serves alone.
  EXPECT_TRUE(t.Observe(views(5), {}, t0 + 5s).serving);
  EXPECT_FALSE(t.Observe(views(5), {}, t0 + 8s).serving);
  auto alone = t.Observe(views(5), {}, t0 + 10500ms);
  EXPECT_TRUE(alone.serving);
  EXPECT_EQ(alone.alive, (Ids{"a"}));
  // Storage unreadable (no views at all): only links count, a serves.
  EXPECT_TRUE(t.Observe({}, {}, t0 + 11s).serving);
}

TEST(QuorumTest, WithDefaultsAKilledLowerIdNeverTakesTheOtherOfTwoOut) {
  // Two masters; a ("127.0.0.3") survives b ("127.0.0.2", the lower id) being killed at t0.
  // Usually b's last view still names a and joins the two into one side; here b's link had
  // dropped a round before it died (its last view names nobody), so until `stale` a sees two
  // sides of one and b's is the lower id. The grace must outlast that: a never reports out.
  QuorumTracker t("127.0.0.3", {});
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(t.Observe({View("127.0.0.2", {"127.0.0.3"}, 10)}, {"127.0.0.2"}, t0 - 1s).serving);
  const std::vector<QuorumView> dead{View("127.0.0.2", {}, 11)};  // its last round
  for (auto at = t0; at <= t0 + 20s; at += 250ms) {
    auto d = t.Observe(dead, {}, at);
    EXPECT_TRUE(d.serving) << "out " << (at - t0).count() / 1000000 << " ms after the kill";
  }
}

TEST(QuorumTest, TheDecisionNamesTheAliveMastersWhoseJobCacheIsDown) {
  QuorumView b = View("b", {"a", "c"});
  b.job_cache_ok = false;
  auto some = DecideQuorum("a", {"b", "c"}, {b, View("c", {"a", "b"})});
  EXPECT_EQ(some.job_cache_down, (Ids{"b"}));
  QuorumView c = View("c", {"a", "b"});
  c.job_cache_ok = false;
  auto all = DecideQuorum("a", {"b", "c"}, {b, c}, /*self_job_cache_ok=*/false);
  EXPECT_EQ(all.job_cache_down, all.alive);  // shared by every alive master
}

TEST(QuorumTest, ViewsGoThroughADirectory) {
  testing::ScratchDir dir;
  const auto q = dir.path() / "quorum";
  EXPECT_FALSE(ReadQuorumViews(q, {"b"}).ok());  // no directory yet
  ASSERT_TRUE(WriteQuorumView(q, View("a", {"b"}, 3)).ok());
  ASSERT_TRUE(WriteQuorumView(q, View("b", {}, 9)).ok());
  std::ofstream(q / "c") << "garbage";
  auto views = ReadQuorumViews(q, {"b", "c", "d"});
  ASSERT_TRUE(views.ok());
  ASSERT_EQ(views->size(), 1u);  // c is malformed, d is missing
  EXPECT_EQ((*views)[0], View("b", {}, 9));
  EXPECT_EQ(std::filesystem::status(q / "a").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

}  // namespace
}  // namespace halite::cluster
