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

TEST(CliArgsTest, DeepOrSelfHoldingCollectionsStayStrings) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(YamlifyArg(deep), wire::Value(deep));
  // A list that holds itself was walked to 2^64 nodes before the word was judged (finding
  // 10); it is refused as YAML and stays the word it was.
  for (const std::string word : {"&a [*a, *a]", "[&a [*a, *a]]", "{k: &a {x: [*a]}}"}) {
    EXPECT_EQ(YamlifyArg(word), wire::Value(word));
  }
  // Anchors as people write them are read.
  EXPECT_EQ(YamlifyArg("[&a 1, *a]"), wire::Value(wire::Array{1, 1}));
}

// Duplicate keys are found with a hash set (a search of the keys before each one took 12.5 s
// for a salt-api form's arg of 10,000 keys, before any login): a map of many keys is read, and
// a repeat anywhere in it keeps the word a string, as Salt's loader refuses it.
TEST(CliArgsTest, MapsOfManyKeysAreReadAndARepeatedKeyAnywhereKeepsTheString) {
  std::string map = "{";
  for (int i = 0; i < 5000; ++i) {
    map += (i ? ", k" : "k") + std::to_string(i) + ": " + std::to_string(i);
  }
  const wire::Value many = YamlifyArg(map + "}");
  ASSERT_TRUE(many.is_map()) << many.ToJson().substr(0, 100);
  ASSERT_EQ(many.map()->size(), 5000u);
  EXPECT_EQ(many.map()->back().first, wire::Value("k4999"));
  EXPECT_EQ(many.map()->back().second, wire::Value(4999));
  for (const std::string& dup : {map + ", k0: again}", "{k2500: x, " + map.substr(1) + "}"}) {
    EXPECT_EQ(YamlifyArg(dup), wire::Value(dup));
  }
  // Keys of one type and value are one key; 0.0 and -0.0 are equal.
  EXPECT_EQ(YamlifyArg("{1: a, 1: b}"), wire::Value("{1: a, 1: b}"));
  EXPECT_EQ(YamlifyArg("{0.0: a, -0.0: b}"), wire::Value("{0.0: a, -0.0: b}"));
  EXPECT_EQ(YamlifyArg("{null: a, ~: b}"), wire::Value("{null: a, ~: b}"));
  const wire::Value distinct = YamlifyArg("{1: a, '1': b, 1.5: c, null: d, yes: e}");
  ASSERT_TRUE(distinct.is_map());
  EXPECT_EQ(distinct.map()->size(), 5u);
}

}  // namespace
}  // namespace halite::client
