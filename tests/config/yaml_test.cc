#include "halite/config/yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

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
