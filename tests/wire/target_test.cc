#include "halite/wire/target.h"

#include <gtest/gtest.h>

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
