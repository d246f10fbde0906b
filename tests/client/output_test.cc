// Salt's outputters as halite prints them (src/client/output.cc), byte for byte.
#include "halite/client/output.h"

#include <gtest/gtest.h>

namespace halite::client {
namespace {

wire::Value Sample() {
  return wire::Value::MapOf(
      {{"name", "web"},
       {"count", 3},
       {"ok", true},
       {"none", wire::Value()},
       {"lines", "a\nb"},
       {"list", wire::Value(wire::Array{wire::Value("x"), wire::Value::MapOf({{"k", 1}})})},
       {"empty", wire::Value::EmptyMap()}});
}

TEST(OutputTest, FormatNamesAreSalts) {
  EXPECT_EQ(*ParseOutputFormat("nested"), OutputFormat::kNested);
  EXPECT_EQ(*ParseOutputFormat("highstate"), OutputFormat::kNested);
  EXPECT_EQ(*ParseOutputFormat("json"), OutputFormat::kJson);
  EXPECT_EQ(*ParseOutputFormat("yaml"), OutputFormat::kYaml);
  EXPECT_EQ(*ParseOutputFormat("txt"), OutputFormat::kTxt);
  EXPECT_EQ(*ParseOutputFormat("raw"), OutputFormat::kTxt);
  auto bad = ParseOutputFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("'xml'"), std::string::npos) << bad.error().message;
}

TEST(OutputTest, NestedIsTheSaltCliDefault) {
  EXPECT_EQ(FormatReturn("web1", wire::Value(true), OutputFormat::kNested), "web1:\n    True\n");
  EXPECT_EQ(FormatReturn("web1", Sample(), OutputFormat::kNested),
            "web1:\n"
            "    ----------\n"
            "    name:\n"
            "        web\n"
            "    count:\n"
            "        3\n"
            "    ok:\n"
            "        True\n"
            "    none:\n"
            "        None\n"
            "    lines:\n"
            "        a\n"
            "        b\n"
            "    list:\n"
            "        - x\n"
            "        |_\n"
            "          ----------\n"
            "          k:\n"
            "              1\n"
            "    empty:\n"
            "        ----------\n");
}

TEST(OutputTest, JsonIsOneObjectPerMinionWithFourSpaces) {
  EXPECT_EQ(FormatReturn("web1", Sample(), OutputFormat::kJson),
            "{\n"
            "    \"web1\": {\n"
            "        \"name\": \"web\",\n"
            "        \"count\": 3,\n"
            "        \"ok\": true,\n"
            "        \"none\": null,\n"
            "        \"lines\": \"a\\nb\",\n"
            "        \"list\": [\n"
            "            \"x\",\n"
            "            {\n"
            "                \"k\": 1\n"
            "            }\n"
            "        ],\n"
            "        \"empty\": {}\n"
            "    }\n"
            "}\n");
  EXPECT_EQ(ToPrettyJson(wire::Value(wire::Array{wire::Value(1)}), 2), "[\n  1\n]");
  EXPECT_EQ(ToPrettyJson(wire::Value::EmptyArray()), "[]");
}

TEST(OutputTest, YamlQuotesWhatAPlainScalarWouldMisread) {
  EXPECT_EQ(FormatReturn("web1", Sample(), OutputFormat::kYaml),
            "web1:\n"
            "  name: web\n"
            "  count: 3\n"
            "  ok: true\n"
            "  none: null\n"
            "  lines: \"a\\nb\"\n"
            "  list:\n"
            "    - x\n"
            "    -\n"
            "      k: 1\n"
            "  empty: {}\n");
  // Strings YAML would read as something else keep their quotes.
  for (const char* s : {"true", "no", "None", "12", "1.5", "a: b", "-x", ""}) {
    std::string out = FormatReturn("m", wire::Value(s), OutputFormat::kYaml);
    EXPECT_EQ(out, "m: " + wire::Value(s).ToJson() + "\n") << s;
  }
}

TEST(OutputTest, TxtIsIdColonValueOnOneLine) {
  EXPECT_EQ(FormatReturn("web1", wire::Value("hello"), OutputFormat::kTxt), "web1: hello\n");
  EXPECT_EQ(FormatReturn("web1", wire::Value(7), OutputFormat::kTxt), "web1: 7\n");
  EXPECT_EQ(FormatReturn("web1", wire::Value::MapOf({{"a", 1}}), OutputFormat::kTxt),
            "web1: {\"a\": 1}\n");
}

}  // namespace
}  // namespace halite::client
