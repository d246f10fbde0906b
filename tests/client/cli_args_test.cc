#include "halite/client/cli_args.h"

#include <gtest/gtest.h>

#include "salt_vectors.h"

namespace halite::client {
namespace {

// Each word alone through Salt's parse_input, compared with ours.
TEST(CliArgsTest, EveryWordIsReadAsSaltsParseInputReadsIt) {
  const nlohmann::json vectors = SaltCliVectors()["parse_input"];
  ASSERT_GT(vectors.size(), 100u);
  for (const auto& v : vectors) {
    const std::string input = v["input"];
    wire::Value want = FromJson(v["arg"]);
    // Salt publishes a Python bignum here (JSON reads it as a float); msgpack carries at most
    // 64 bits, so halite keeps the word as typed.
    if (input == "123456789012345678901") want = wire::Value(wire::Array{wire::Value(input)});
    const wire::Value got(ParseCliArgs({input}));
    EXPECT_TRUE(SameValue(got, want)) << "input " << nlohmann::json(input).dump() << ": got "
                                      << got.ToJson() << ", Salt " << v["arg"].dump();
  }
}

TEST(CliArgsTest, KwargsKeepTheirOrderAfterPositionalsAndNoParseKeepsStrings) {
  wire::Array got = ParseCliArgs({"b=2", "x", "a=1", "c=[1]"}, {"c"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], wire::Value("x"));
  const wire::Map& kw = *got[1].map();
  ASSERT_EQ(kw.size(), 4u);
  EXPECT_EQ(kw[0].first, wire::Value("__kwarg__"));
  EXPECT_EQ(kw[0].second, wire::Value(true));
  EXPECT_EQ(kw[1].first, wire::Value("b"));
  EXPECT_EQ(kw[1].second, wire::Value(2));
  EXPECT_EQ(kw[2].first, wire::Value("a"));
  EXPECT_EQ(kw[3].second, wire::Value("[1]"));
}

TEST(CliArgsTest, DeepFlowCollectionsStayStrings) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(YamlifyArg(deep), wire::Value(deep));
}

}  // namespace
}  // namespace halite::client
