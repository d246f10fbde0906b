#include "halite/wire/target.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
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

// Known answers from stock Salt 3007.8 (tests/data/salt/gen_cli_vectors.py).
nlohmann::json SaltVectors() {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/salt/cli_vectors.json");
  return nlohmann::json::parse(in);
}

Value FromJson(const nlohmann::json& j) {
  if (j.is_object()) {
    Map m;
    for (const auto& [k, v] : j.items()) m.emplace_back(Value(k), FromJson(v));
    return Value(std::move(m));
  }
  if (j.is_array()) {
    Array a;
    for (const auto& v : j) a.push_back(FromJson(v));
    return Value(std::move(a));
  }
  if (j.is_string()) return Value(j.get<std::string>());
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_integer()) return Value(j.get<std::int64_t>());
  if (j.is_number_float()) return Value(j.get<double>());
  return Value();
}

TEST(TargetTest, SubdictMatchAgreesWithSalt) {
  const nlohmann::json v = SaltVectors()["subdict_match"];
  const Value data = FromJson(v["data"]);
  ASSERT_GT(v["cases"].size(), 50u);
  for (const auto& c : v["cases"]) {
    const std::string mode = c["mode"];
    const SubdictMode m = mode == "glob"    ? SubdictMode::kGlob
                          : mode == "regex" ? SubdictMode::kRegex
                                            : SubdictMode::kExact;
    auto r = SubdictMatch(data, c["expr"].get<std::string>(), ":", m);
    ASSERT_TRUE(r.ok()) << c["expr"];
    EXPECT_EQ(*r, c["match"].get<bool>()) << c["expr"] << " " << mode;
  }
  // Each split point walks the key path: a flood of delimiters is refused, not squared.
  EXPECT_EQ(
      SubdictMatch(data, "role" + std::string(300, ':'), ":", SubdictMode::kGlob).error().code,
      ErrorCode::kResourceExhausted);
}

// Found by target_fuzz: "*:" wildcards try every split point, and each "*:" level walks every
// value below it again, so a 281-byte pillar target took seconds against a three-level map.
// Such an expression is refused after a bounded amount of work, not evaluated in full.
TEST(TargetTest, SubdictWildcardFloodIsALimitErrorNotMinutesOfWork) {
  const Value data =
      Value::MapOf({{"a", Value::MapOf({{"b", Value::MapOf({{"c", "d"}, {"e", 7}})}, {"f", "g"}})},
                    {"list", Value(Array{1, "two", Value::MapOf({{"h", "i"}})})},
                    {"os", "Debian"}});
  std::string expr;
  for (int i = 0; i < 120; ++i) expr += "*:";
  expr += "nomatch";
  for (SubdictMode mode : {SubdictMode::kGlob, SubdictMode::kExact}) {
    auto r = SubdictMatch(data, expr, ":", mode);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().ToString();
  }
  // The same wildcards, as far as a real pillar target goes, are still evaluated.
  auto ok = SubdictMatch(data, "*:*:*:c:d", ":", SubdictMode::kGlob);
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_TRUE(*ok);
  // A smaller budget (target_fuzz's) cuts the same match sooner, through MatchTarget too.
  auto cut = SubdictMatch(data, "*:*:*:c:d", ":", SubdictMode::kGlob, 5);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(cut.error().message.find("more than 5 steps"), std::string::npos)
      << cut.error().message;
  TargetContext ctx{"web1", &data, false, ":"};
  EXPECT_TRUE(*MatchTarget(Value("*:*:*:c:d"), "grain", ctx));
  ctx.subdict_work_budget = 5;
  EXPECT_EQ(MatchTarget(Value("*:*:*:c:d"), "grain", ctx).error().code,
            ErrorCode::kResourceExhausted);
  auto miss = SubdictMatch(data, "*:*:*:*:*:*:nomatch", ":", SubdictMode::kGlob);
  ASSERT_TRUE(miss.ok()) << miss.error().ToString();
  EXPECT_FALSE(*miss);
  // So is a wildcard over a large pillar map, entry by entry, to the last one and past it.
  Map users;
  for (int i = 0; i < 10'000; ++i) {
    users.emplace_back(Value("u" + std::to_string(i)),
                       Value::MapOf({{"uid", 1000 + i}, {"shell", "/bin/bash"}}));
  }
  const Value pillar = Value::MapOf({{"users", Value(std::move(users))}});
  for (auto [expr, want] : {std::pair{"users:*:uid:10999", true},
                            {"users:*:uid:99999", false},
                            {"*:*:uid:10999", true}}) {
    auto r = SubdictMatch(pillar, expr, ":", SubdictMode::kGlob);
    ASSERT_TRUE(r.ok()) << expr << ": " << r.error().ToString();
    EXPECT_EQ(*r, want) << expr;
  }
}

// Each compound term is bounded on its own (a regex by its match limit, a subdict match by
// its steps), but 256 KiB holds thousands of terms: 100 terms of .*.*.*.*.*xy against a
// 38-byte grain that holds both letters took 0.95 s per minion in release, so a full-size
// expression ran for minutes per minion. With a CPU budget the evaluation stops at the first term
// past it.
TEST(TargetTest, CompoundOfManyCostlyTermsStopsAtItsCpuBudget) {
  const Value grains = Value::MapOf({{"blob", "y" + std::string(36, 'a') + "x"}});
  std::string expr = "P@blob:.*.*.*.*.*xy";
  while (expr.size() < 64 * 1024) expr += " or P@blob:.*.*.*.*.*xy";
  const CpuBudget budget(std::chrono::milliseconds(20));
  TargetContext ctx{"web1", &grains, false, ":", nullptr, nullptr, &budget};
  auto r = MatchTarget(expr, "compound", ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().ToString();
  EXPECT_NE(r.error().ToString().find("compound target needs more than 20 ms of CPU"),
            std::string::npos)
      << r.error().ToString();
  // A small compound under the same kind of budget is evaluated as before.
  const CpuBudget roomy(std::chrono::seconds(5));
  TargetContext fits{"web1", &grains, false, ":", nullptr, nullptr, &roomy};
  auto ok = MatchTarget("P@blob:y.+x and web*", "compound", fits);
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_TRUE(*ok);
}

TEST(TargetTest, IpCidrAgreesWithSalt) {
  const nlohmann::json v = SaltVectors()["ipcidr"];
  const Value grains = FromJson(v["grains"]);
  ASSERT_GT(v["cases"].size(), 10u);
  for (const auto& c : v["cases"]) {
    EXPECT_EQ(IpCidrMatch(c["tgt"].get<std::string>(), grains), c["match"].get<bool>()) << c["tgt"];
  }
}

Nodegroups SaltNodegroups(const nlohmann::json& defs) {
  Nodegroups groups;
  for (const auto& [name, def] : defs.items()) {
    std::vector<std::string> words;
    if (def.is_string()) {
      std::string text = def;
      std::size_t pos = 0;
      while ((pos = text.find_first_not_of(' ', pos)) != std::string::npos) {
        std::size_t end = std::min(text.find(' ', pos), text.size());
        words.push_back(text.substr(pos, end - pos));
        pos = end;
      }
    } else {
      for (const auto& w : def) words.push_back(w);
    }
    groups[name] = words;
  }
  return groups;
}

TEST(TargetTest, NodegroupExpansionAgreesWithSalt) {
  const nlohmann::json v = SaltVectors()["nodegroups"];
  const Nodegroups groups = SaltNodegroups(v["nodegroups"]);
  ASSERT_GT(v["cases"].size(), 8u);
  for (const auto& c : v["cases"]) {
    Result<std::string> got = c.contains("nodegroup")
                                  ? ExpandNodegroup(c["nodegroup"].get<std::string>(), groups)
                                  : ExpandCompoundNodegroups(c["expr"].get<std::string>(), groups);
    ASSERT_TRUE(got.ok()) << c.dump() << got.error().ToString();
    EXPECT_EQ(*got, c["compound"].get<std::string>()) << c.dump();
  }
  // Salt logs these and drops the term; halite refuses the target.
  EXPECT_EQ(ExpandNodegroup("loop", groups).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ExpandNodegroup("nosuch", groups).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ExpandCompoundNodegroups("web1 or N@nosuch", groups).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(TargetTest, NodegroupTargetsMatchThroughTheirExpansion) {
  Nodegroups groups{{"dbs", {"db1", "db2"}},
                    {"debweb", {"G@os:Debian", "and", "web*"}},
                    {"both", {"N@dbs", "or", "N@debweb"}}};
  Value grains = Grains();
  auto match = [&](std::string_view tgt, std::string_view type, std::string_view id) {
    TargetContext ctx{id, &grains, false, ":", nullptr, &groups};
    auto r = MatchTarget(Value(tgt), type, ctx);
    EXPECT_TRUE(r.ok()) << tgt << ": " << r.error().ToString();
    return r.ok() && *r;
  };
  EXPECT_TRUE(match("dbs", "nodegroup", "db2"));
  EXPECT_FALSE(match("dbs", "nodegroup", "web1"));
  EXPECT_TRUE(match("both", "nodegroup", "web1"));
  EXPECT_TRUE(match("both", "nodegroup", "db1"));
  EXPECT_FALSE(match("both", "nodegroup", "mail1"));
  EXPECT_TRUE(match("N@debweb and not N@dbs", "compound", "web1"));
  EXPECT_FALSE(match("N@dbs and web*", "compound", "db1"));
  TargetContext none{"db1", &grains, false, ":"};
  EXPECT_FALSE(MatchTarget(Value("dbs"), "nodegroup", none).ok());
  EXPECT_FALSE(MatchTarget(Value("N@dbs"), "compound", none).ok());
}

Value Pillar() {
  return Value::MapOf({{"role", "web"},
                       {"tier", Value::MapOf({{"name", "front"}, {"weight", 3}})},
                       {"apps", Value(Array{"nginx", "redis"})}});
}

TEST(TargetTest, PillarTargetsAndCompoundTerms) {
  Value grains = Grains();
  grains.Set("ipv4", Value(Array{"127.0.0.1", "10.0.0.5"}));
  Value pillar = Pillar();
  auto match = [&](std::string_view tgt, std::string_view type) {
    TargetContext ctx{"web1", &grains, false, ":", &pillar, nullptr};
    auto r = MatchTarget(Value(tgt), type, ctx);
    EXPECT_TRUE(r.ok()) << tgt << ": " << r.error().ToString();
    return r.ok() && *r;
  };
  EXPECT_TRUE(match("role:web", "pillar"));
  EXPECT_TRUE(match("tier:name:fr*", "pillar"));
  EXPECT_TRUE(match("apps:redis", "pillar"));
  EXPECT_FALSE(match("role:db", "pillar"));
  EXPECT_TRUE(match("role:w.b", "pillar_pcre"));
  EXPECT_FALSE(match("role:x.b", "pillar_pcre"));
  EXPECT_TRUE(match("tier:weight:3", "pillar_exact"));
  EXPECT_FALSE(match("role:w*", "pillar_exact"));
  EXPECT_TRUE(match("10.0.0.0/8", "ipcidr"));
  EXPECT_FALSE(match("192.168.0.0/16", "ipcidr"));
  EXPECT_TRUE(match("I@role:web and J@apps:ng.* and S@10.0.0.5 and G@os:Debian", "compound"));
  EXPECT_FALSE(match("I@role:db or S@192.168.1.0/24", "compound"));
  EXPECT_TRUE(match("I;@tier;name;front and P;@os;Deb.*", "compound"));
  EXPECT_TRUE(match("not I@role:db", "compound"));
}

TEST(TargetTest, UnknownPillarIsGreedyOnlyOnTheMaster) {
  TargetContext master{"m", nullptr, true, ":", nullptr, nullptr};
  TargetContext minion{"m", nullptr, false, ":", nullptr, nullptr};
  EXPECT_TRUE(*MatchTarget("role:web", "pillar", master));
  EXPECT_FALSE(*MatchTarget("role:web", "pillar", minion));
  EXPECT_TRUE(*MatchTarget("10.0.0.0/8", "ipcidr", master));
  EXPECT_FALSE(*MatchTarget("10.0.0.0/8", "ipcidr", minion));
  EXPECT_TRUE(*MatchTarget("I@role:web", "compound", master));
  EXPECT_FALSE(*MatchTarget("I@role:web", "compound", minion));
}

}  // namespace
}  // namespace halite::wire
