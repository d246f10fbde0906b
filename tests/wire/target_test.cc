#include "halite/wire/target.h"

#include <gtest/gtest.h>

#include <string>

#include "halite/wire/regex.h"

namespace halite::wire {
namespace {

Value Grains() {
  return Value::MapOf({{"os", "Debian"},
                       {"os_family", "Debian"},
                       {"num_cpus", 2},
                       {"virtual", false},
                       {"roles", Value(Array{"web", "db"})},
                       {"ip_interfaces", Value::MapOf({{"eth0", Value(Array{"10.0.0.5"})}})},
                       {"tz", "Europe:Paris"}});
}

bool Match(const Value& tgt, std::string_view type, std::string_view id = "web1") {
  Value grains = Grains();
  TargetContext ctx{id, &grains, false, ":"};
  auto r = MatchTarget(tgt, type, ctx);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r.ok() && *r;
}

TEST(TargetTest, GlobPcreList) {
  EXPECT_TRUE(Match("*", "glob"));
  EXPECT_TRUE(Match("web?", "glob"));
  EXPECT_FALSE(Match("db*", "glob"));
  EXPECT_TRUE(Match("web[0-9]", ""));
  EXPECT_TRUE(Match("web\\d", "pcre"));
  EXPECT_FALSE(Match("db.*", "pcre"));
  EXPECT_TRUE(Match("db1,web1", "list"));
  EXPECT_TRUE(Match(Value(Array{"x", "web1"}), "list"));
  EXPECT_FALSE(Match("web10", "list"));
}

TEST(TargetTest, GrainsIncludingNestedListsAndDelimiterInValue) {
  EXPECT_TRUE(Match("os:Debian", "grain"));
  EXPECT_TRUE(Match("os:Deb*", "grain"));
  EXPECT_FALSE(Match("os:RedHat", "grain"));
  EXPECT_TRUE(Match("roles:db", "grain"));
  EXPECT_TRUE(Match("num_cpus:2", "grain"));
  EXPECT_TRUE(Match("virtual:False", "grain"));
  EXPECT_TRUE(Match("ip_interfaces:eth0:10.0.0.*", "grain"));
  EXPECT_TRUE(Match("tz:Europe:Paris", "grain"));
  EXPECT_TRUE(Match("os:Deb.*", "grain_pcre"));
  EXPECT_FALSE(Match("nosuch:x", "grain"));
}

TEST(TargetTest, UnknownGrainsAreGreedyOnlyOnTheMaster) {
  TargetContext master{"m", nullptr, true, ":"};
  TargetContext minion{"m", nullptr, false, ":"};
  EXPECT_TRUE(*MatchTarget("os:Debian", "grain", master));
  EXPECT_FALSE(*MatchTarget("os:Debian", "grain", minion));
}

TEST(TargetTest, Compound) {
  EXPECT_TRUE(Match("G@os:Debian and web*", "compound"));
  EXPECT_FALSE(Match("G@os:Debian and not web*", "compound"));
  EXPECT_TRUE(Match("db* or G@roles:web", "compound"));
  EXPECT_TRUE(Match("not db* and ( L@x,web1 or E@^zz )", "compound"));
  EXPECT_TRUE(Match("(web1 or db1) and G@os:Debian", "compound"));
  EXPECT_FALSE(Match("not ( web1 or db1 )", "compound"));
  EXPECT_TRUE(Match("G@os:Debian web*", "compound"));  // implicit and
  EXPECT_TRUE(Match("db* or web* and not G@os:RedHat", "compound"));
}

// Salt's pcre matchers use re.match: anchored at the start, not at the end.
TEST(TargetTest, PcreIsAnchoredAtTheStartOnly) {
  EXPECT_TRUE(Match("web", "pcre"));
  EXPECT_FALSE(Match("eb1", "pcre"));
  EXPECT_TRUE(Match("E@we", "compound"));
  EXPECT_TRUE(Match("os:Deb", "grain_pcre"));
  EXPECT_FALSE(Match("os:ebian", "grain_pcre"));
}

Result<bool> MatchWithGrains(const Value& tgt, std::string_view type, const Value& grains,
                             std::string_view id = "web1") {
  TargetContext ctx{id, &grains, false, ":"};
  return MatchTarget(tgt, type, ctx);
}

// The finding: a 1 MB grain and a grain_pcre target overflowed the master's stack inside
// std::regex (on the old code this test dies with a stack overflow). Text over the 64 KiB cap
// does not match; text under it is matched without recursion.
TEST(TargetTest, MegabyteGrainWithGrainPcreDoesNotCrash) {
  Value grains = Value::MapOf({{"big", std::string(1u << 20, 'a')}});
  auto over = MatchWithGrains("big:(a|b)*$", "grain_pcre", grains);
  ASSERT_TRUE(over.ok()) << over.error().ToString();
  EXPECT_FALSE(*over);
  Value within = Value::MapOf({{"big", std::string(64u << 10, 'a')}});
  auto under = MatchWithGrains("big:(a|b)*$", "grain_pcre", within);
  ASSERT_TRUE(under.ok()) << under.error().ToString();
  EXPECT_TRUE(*under);
}

// The finding: (a|aa)*c hung a worker (on the old code this test runs into ctest's timeout).
TEST(TargetTest, BacktrackingPatternIsALimitErrorNotAHang) {
  const std::string id = std::string(40, 'a') + "!c";
  for (const char* type : {"pcre", "compound"}) {
    TargetContext ctx{id, nullptr, false, ":"};
    auto r = MatchTarget(std::string_view(type) == "pcre" ? "(a|aa)*c" : "E@(a|aa)*c", type, ctx);
    ASSERT_FALSE(r.ok()) << type;
    EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().ToString();
  }
  Value grains = Value::MapOf({{"g", id}});
  auto r = MatchWithGrains("g:(a|aa)*c", "grain_pcre", grains);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
}

// What ResolveTargets does: one target against 10,000 minions' grains. The regex is compiled
// once, not once per minion.
TEST(TargetTest, OnePatternIsCompiledOnceForManyMinions) {
  const std::size_t before = RegexCacheMissesForTest();
  Value grains = Value::MapOf({{"os", "Debian"}});
  int matched = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = "minion-" + std::to_string(i);
    auto r = MatchWithGrains("G@os:Debian and E@minion-[0-9]*7$", "compound", grains, id);
    ASSERT_TRUE(r.ok());
    matched += *r ? 1 : 0;
  }
  EXPECT_EQ(matched, 1000);
  EXPECT_EQ(RegexCacheMissesForTest(), before + 1);
}

// The finding: 100k 'not' or '(' overflowed the stack in the recursive parser (on the old
// code this test dies with a stack overflow).
TEST(TargetTest, DeeplyNestedCompoundIsRefused) {
  TargetContext ctx{"web1", nullptr, false, ":"};
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  nots += "web1";
  std::string parens(100000, '(');
  parens += "web1" + std::string(100000, ')');
  for (const std::string& expr : {nots, parens}) {
    auto r = MatchTarget(expr, "compound", ctx);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().ToString();
  }
  std::string ok_nots;
  for (std::size_t i = 0; i < kMaxCompoundNesting; ++i) ok_nots += "not ";
  EXPECT_TRUE(*MatchTarget(ok_nots + "web1", "compound", ctx));  // an even number of nots
  EXPECT_FALSE(MatchTarget("not " + ok_nots + "web1", "compound", ctx).ok());
  std::string ok_parens =
      std::string(kMaxCompoundNesting, '(') + "web1" + std::string(kMaxCompoundNesting, ')');
  EXPECT_TRUE(*MatchTarget(ok_parens, "compound", ctx));
}

TEST(TargetTest, MatcherTermsKeepTheirParentheses) {
  EXPECT_TRUE(Match("E@(web|db)1 and (web1)", "compound"));
  EXPECT_TRUE(Match("( E@(web|db)1 )", "compound"));
  EXPECT_FALSE(Match("( E@(db|x)1 ) or (db1)", "compound"));
  // The same expression evaluated for another minion after a different one on this thread.
  EXPECT_TRUE(Match("E@(web|db)1 and (web1)", "compound"));
  EXPECT_TRUE(Match("E@(web|db)1", "compound", "db1"));
}

TEST(TargetTest, OverlongCompoundIsRefused) {
  TargetContext ctx{"web1", nullptr, false, ":"};
  std::string many = "web1";
  for (std::size_t i = 0; i < kMaxCompoundTokens / 2; ++i) many += " or db";
  auto terms = MatchTarget(many, "compound", ctx);
  ASSERT_FALSE(terms.ok());
  EXPECT_EQ(terms.error().code, ErrorCode::kResourceExhausted);
  auto bytes = MatchTarget("L@" + std::string(kMaxCompoundBytes, 'x'), "compound", ctx);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().code, ErrorCode::kResourceExhausted);
}

// Python's fnmatch.fnmatchcase, not glibc fnmatch: '\' is literal, e.g.
//   python3 -c 'import fnmatch; print(fnmatch.fnmatchcase("web\\1", "web\\1"))'  # True
TEST(TargetTest, GlobTargetsUsePythonFnmatch) {
  EXPECT_TRUE(Match("web\\1", "glob", "web\\1"));
  EXPECT_FALSE(Match("web\\1", "glob", "web1"));  // glibc: true
  EXPECT_TRUE(Match("[!d]eb1", "glob"));
  EXPECT_TRUE(Match("os:[!R]*", "grain"));
}

TEST(TargetTest, MalformedTargetsAreErrors) {
  TargetContext ctx{"web1", nullptr, false, ":"};
  EXPECT_FALSE(MatchTarget("web1 and", "compound", ctx).ok());
  EXPECT_FALSE(MatchTarget("( web1", "compound", ctx).ok());
  EXPECT_FALSE(MatchTarget("X@foo", "compound", ctx).ok());
  EXPECT_FALSE(MatchTarget("(unclosed", "pcre", ctx).ok());
  EXPECT_FALSE(MatchTarget("web1", "nodegroup_x", ctx).ok());
  EXPECT_FALSE(MatchTarget(Value(3), "glob", ctx).ok());
}

}  // namespace
}  // namespace halite::wire
