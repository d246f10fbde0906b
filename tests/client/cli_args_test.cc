#include "halite/client/cli_args.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

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
  // Keys Python's dict holds as one are one key; 0.0 and -0.0 are equal, and so are 1 and yes
  // (True), as Salt's yamlify_arg says (the rest are in cli_vectors.json).
  EXPECT_EQ(YamlifyArg("{1: a, 1: b}"), wire::Value("{1: a, 1: b}"));
  EXPECT_EQ(YamlifyArg("{0.0: a, -0.0: b}"), wire::Value("{0.0: a, -0.0: b}"));
  EXPECT_EQ(YamlifyArg("{null: a, ~: b}"), wire::Value("{null: a, ~: b}"));
  const std::string with_yes = "{1: a, '1': b, 1.5: c, null: d, yes: e}";
  EXPECT_EQ(YamlifyArg(with_yes), wire::Value(with_yes));
  const wire::Value distinct = YamlifyArg("{1: a, '1': b, 1.5: c, null: d, no: e}");
  ASSERT_TRUE(distinct.is_map());
  EXPECT_EQ(distinct.map()->size(), 5u);
}

// Words far longer than a line are read as Salt reads them, without recursion: libstdc++'s
// std::regex recursed once per character, and 130,000 digits overflowed the stack (finding 13;
// one salt-api form field crashed halite-api before any login). Salt's answers for the same
// words: tests/data/salt/long_words.txt (gen_long_words.py).
TEST(CliArgsTest, LongWordsAreReadWithoutExhaustingTheStack) {
  constexpr std::size_t n = 130000;
  const std::map<std::string, std::string> words = {
      {"digits", std::string(n, '1')},
      {"underscored",
       [] {
         std::string w;
         for (std::size_t i = 0; i < n / 2; ++i) w += "1_";
         return w;
       }()},
      {"float", "1." + std::string(n, '5')},
      {"exponent", "1." + std::string(n, '5') + "e+3"},
      {"digits_then_x", std::string(n, '1') + "x"},
      {"sexagesimal", std::string(n, '1') + ":30"},
      {"negative", "-" + std::string(n, '9')},
  };
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/salt/long_words.txt");
  std::string line;
  std::size_t checked = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, type, rest;
    fields >> name >> type;
    std::getline(fields >> std::ws, rest);
    ASSERT_TRUE(words.count(name)) << line;
    const wire::Value got = YamlifyArg(words.at(name));
    if (type == "str") {
      EXPECT_EQ(got, wire::Value(words.at(name))) << name;
    } else {
      ASSERT_EQ(type, "float") << line;
      ASSERT_TRUE(got.is_float()) << name << ": " << got.ToJson().substr(0, 80);
      EXPECT_EQ(*got.float64(), std::stod(rest)) << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, words.size());
  // Ten times as long (a salt-api body's limit is 1 MiB): still read, still no recursion.
  const std::string long_float = "1." + std::string(10 * n, '5');
  EXPECT_EQ(YamlifyArg(long_float).float64(), std::stod(long_float));
}

}  // namespace
}  // namespace halite::client
