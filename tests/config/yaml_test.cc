#include "halite/config/yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "hostile_yaml.h"

namespace halite::config {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

YAML::Node Parse(std::string_view text) {
  Result<YAML::Node> node = ParseYaml(text);
  EXPECT_TRUE(node.ok()) << node.error().ToString();
  return node.ok() ? *node : YAML::Node();
}

TEST(YamlTest, EmptyTextIsNull) { EXPECT_TRUE(Parse("").IsNull()); }

TEST(YamlTest, MoreThanOneDocumentIsInvalid) {
  Result<YAML::Node> node = ParseYaml("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(node.error().message, StartsWith("line 3, column 1: expected one YAML document"));
}

// yaml-cpp 0.7's LoadAll loops for ever (growing memory) on this; found by config_fuzz.
TEST(YamlTest, InputThatLoopsYamlCppLoadAllIsAnError) {
  Result<YAML::Node> node = ParseYaml(" ,:\n?[ ab] c\n");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.error().code, ErrorCode::kInvalidArgument);
}

// Nodes a walk of the loaded tree visits, aliases at their anchor's size each time.
std::uint64_t Walked(const YAML::Node& node) {
  std::uint64_t n = 1;
  if (node.IsSequence()) {
    for (const auto& e : node) n += Walked(e);
  } else if (node.IsMap()) {
    for (const auto& kv : node) n += Walked(kv.first) + Walked(kv.second);
  }
  return n;
}

// yaml-cpp loads "&a [*a, *a]" as a list that holds itself twice: every converter to a
// wire::Value walked it until its depth cap, 2^64 nodes, for ever (an 11-byte salt-api body).
TEST(YamlTest, AnAliasInsideItsOwnAnchorIsAnError) {
  for (const char* text : {"&a [*a, *a]", "a: &a {b: *a}\n", "- &x\n  - [1, *x]\n"}) {
    Result<YAML::Node> node = ParseYaml(text);
    ASSERT_FALSE(node.ok()) << text;
    EXPECT_EQ(node.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(node.error().message, ::testing::HasSubstr("an alias inside the node its anchor"))
        << text;
  }
}

// Nine levels of ten aliases (about 500 bytes) are 10^9 nodes to a walk: it took over 2 GB
// and 45 s in api_body_fuzz before the first byte of a reply.
TEST(YamlTest, AliasesThatExpandPastTheBudgetAreAnError) {
  const std::string text = halite::testing::AliasBombYaml();
  ASSERT_EQ(text.rfind("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n", 0), 0u);
  ASSERT_LT(text.size(), 600u);
  const auto start = std::chrono::steady_clock::now();
  Result<YAML::Node> node = ParseYaml(text);
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.error().message,
              ::testing::HasSubstr("aliases expand this document past " +
                                   std::to_string(MaxYamlNodes(text.size())) + " nodes"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Anchors as sites use them are read as before, even reused many times, up to the budget;
// one node more is refused. The scan counts exactly what a walk of the result visits.
TEST(YamlTest, AnchorsWithinTheBudgetLoadAndCountAsAWalkSeesThem) {
  const YAML::Node small = Parse("base: &b {x: 1, y: [2, &s three]}\nprod: *b\nname: *s\n");
  EXPECT_EQ(small["prod"]["y"][1].as<std::string>(), "three");
  EXPECT_EQ(small["name"].as<std::string>(), "three");
  EXPECT_EQ(Walked(small), 19u);  // the map, its 3 keys, base's 7 nodes, prod's 7, name's 1

  // A root list of one anchored list of k scalars, then n aliases of it.
  auto doc = [](int k, int n) {
    std::string t = "- &a [";
    for (int i = 0; i < k; ++i) t += i ? ",x" : "x";
    t += "]\n";
    for (int i = 0; i < n; ++i) t += "- *a\n";
    return t;
  };
  const int k = 1000;
  // Walked nodes: root 1, then (1 + k) for the anchor and for each of n aliases.
  int n = 0;
  while (1 + (n + 2) * std::uint64_t{1 + k} <= MaxYamlNodes(doc(k, n + 1).size())) ++n;
  const YAML::Node full = Parse(doc(k, n));
  EXPECT_EQ(Walked(full), 1 + (n + 1) * std::uint64_t{1 + k});
  EXPECT_GT(Walked(full), 100000u);
  EXPECT_FALSE(ParseYaml(doc(k, n + 1)).ok());
}

TEST(YamlTest, SyntaxErrorCarriesLineAndColumn) {
  Result<YAML::Node> node = ParseYaml("a: 1\nb: [1, 2\n");
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.error().message, StartsWith("line 3,"));
}

TEST(YamlMapReaderTest, PrefixNamesNestedKeys) {
  // How a job cache factory reads its `job_cache` node.
  YamlMapReader reader(Parse("dsn: x\npool: many\nextra: 1\n"), "job_cache.");
  std::string dsn;
  int pool = 4;
  EXPECT_TRUE(reader.ReadString("dsn", dsn));
  EXPECT_FALSE(reader.ReadInt("pool", pool, 1, 64));
  reader.WarnUnknownKeys();
  EXPECT_EQ(dsn, "x");
  EXPECT_EQ(pool, 4);
  EXPECT_EQ(FormatProblems(reader.problems()), "job_cache.pool: expected an integer (got 'many')");
  EXPECT_THAT(reader.warnings(), ElementsAre("unknown key 'job_cache.extra' (ignored)"));
  EXPECT_TRUE(reader.HasProblem("pool"));
  EXPECT_FALSE(reader.HasProblem("dsn"));
}

TEST(YamlMapReaderTest, NonMapNodeIsOneProblem) {
  YamlMapReader reader(Parse("[1, 2]"), "job_cache.");
  std::string value;
  EXPECT_FALSE(reader.ReadString("dsn", value));
  EXPECT_EQ(FormatProblems(reader.problems()),
            "job_cache: expected a map of settings (got a list)");
}

TEST(YamlMapReaderTest, AbsentAndNullKeysLeaveDefaults) {
  YamlMapReader reader(Parse("a:\nb: ~\n"));
  int a = 1;
  std::chrono::seconds b{2};
  EXPECT_FALSE(reader.Has("a"));
  EXPECT_FALSE(reader.ReadInt("a", a, 0, 10));
  EXPECT_FALSE(reader.ReadDuration("b", b, 0, 10));
  EXPECT_FALSE(reader.ReadInt("c", a, 0, 10));
  reader.WarnUnknownKeys();
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, std::chrono::seconds(2));
  EXPECT_THAT(reader.problems(), IsEmpty());
  EXPECT_THAT(reader.warnings(), IsEmpty());
}

TEST(YamlMapReaderTest, IntegersUseYamlForms) {
  YamlMapReader reader(Parse("dec: -12\nhex: 0x1f\nbig: 99999999999999999999\nfloat: 1e3\n"));
  std::int64_t dec = 0, hex = 0, big = 0, flt = 0;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(reader.ReadInt("dec", dec, kMin, kMax));
  EXPECT_TRUE(reader.ReadInt("hex", hex, kMin, kMax));
  EXPECT_FALSE(reader.ReadInt("big", big, kMin, kMax));
  EXPECT_FALSE(reader.ReadInt("float", flt, kMin, kMax));
  EXPECT_EQ(dec, -12);
  EXPECT_EQ(hex, 31);
  EXPECT_EQ(reader.problems().size(), 2u);
}

TEST(YamlMapReaderTest, ProblemsAreInDocumentOrder) {
  YamlMapReader reader(Parse("b: x\na: y\n"));
  int a = 0, b = 0;
  reader.ReadInt("a", a, 0, 1);
  reader.ReadInt("b", b, 0, 1);
  reader.AddProblem("not_in_document", "checked later");
  reader.AddProblem("b", "checked later");
  EXPECT_EQ(FormatProblems(reader.problems()),
            "b: expected an integer (got 'x')\n"
            "b: checked later\n"
            "a: expected an integer (got 'y')\n"
            "not_in_document: checked later");
}

TEST(YamlMapReaderTest, StringListAcceptsASingleScalarOnlyWhenAsked) {
  YamlMapReader reader(Parse("one: a\nmany: [a, b]\n"));
  std::vector<std::string> one, strict, many;
  EXPECT_TRUE(reader.ReadStringList("one", one, /*allow_single=*/true));
  EXPECT_FALSE(reader.ReadStringList("one", strict, /*allow_single=*/false));
  EXPECT_TRUE(reader.ReadStringList("many", many, /*allow_single=*/false));
  EXPECT_THAT(one, ElementsAre("a"));
  EXPECT_THAT(strict, IsEmpty());
  EXPECT_THAT(many, ElementsAre("a", "b"));
}

TEST(YamlMapReaderTest, NonScalarKeysAreProblems) {
  YamlMapReader reader(Parse("? [a, b]\n: 1\n"));
  EXPECT_EQ(FormatProblems(reader.problems()),
            "(top level): keys must be names, line 1 (got a list)");
}

TEST(YamlTest, DescribeShowsScalarsQuotedAndCollectionsByKind) {
  EXPECT_EQ(DescribeYaml(Parse("abc")), "'abc'");
  EXPECT_EQ(DescribeYaml(Parse("[1]")), "a list");
  EXPECT_EQ(DescribeYaml(Parse("{a: 1}")), "a map");
  EXPECT_EQ(DescribeYaml(Parse("~")), "null");
}

}  // namespace
}  // namespace halite::config
