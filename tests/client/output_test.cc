// Salt's outputters as halite prints them (src/client/output.cc), byte for byte.
#include "halite/client/output.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

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
  EXPECT_EQ(*ParseOutputFormat("highstate"), OutputFormat::kHighstate);
  EXPECT_EQ(*ParseOutputFormat("json"), OutputFormat::kJson);
  EXPECT_EQ(*ParseOutputFormat("yaml"), OutputFormat::kYaml);
  EXPECT_EQ(*ParseOutputFormat("txt"), OutputFormat::kTxt);
  EXPECT_EQ(*ParseOutputFormat("text"), OutputFormat::kTxt);
  EXPECT_EQ(*ParseOutputFormat("raw"), OutputFormat::kRaw);
  EXPECT_EQ(*ParseOutputFormat("pprint"), OutputFormat::kPprint);
  EXPECT_EQ(*ParseOutputFormat("newline_values_only"), OutputFormat::kNewlineValuesOnly);
  auto bad = ParseOutputFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("'xml'"), std::string::npos) << bad.error().message;
}

// Salt's nested outputter sorts a dict's keys (it is not an OrderedDict after msgpack).
TEST(OutputTest, NestedIsTheSaltCliDefault) {
  EXPECT_EQ(FormatReturn("web1", wire::Value(true), OutputFormat::kNested), "web1:\n    True\n");
  EXPECT_EQ(FormatReturn("web1", Sample(), OutputFormat::kNested),
            "web1:\n"
            "    ----------\n"
            "    count:\n"
            "        3\n"
            "    empty:\n"
            "        ----------\n"
            "    lines:\n"
            "        a\n"
            "        b\n"
            "    list:\n"
            "        - x\n"
            "        |_\n"
            "          ----------\n"
            "          k:\n"
            "              1\n"
            "    name:\n"
            "        web\n"
            "    none:\n"
            "        None\n"
            "    ok:\n"
            "        True\n");
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

// A minion's return reaches an operator's terminal and salt-api's YAML clients through this
// outputter: control bytes, C1 controls (U+009B is a CSI), line separators, a BOM and stray
// bytes are escaped in a double-quoted scalar, as PyYAML's safe_dump does, instead of written
// raw (finding 34); YAML 1.1's other implicit types are quoted too. YAML reads each back as
// the same string.
TEST(OutputTest, YamlEscapesControlBytesAndQuotesYaml11Types) {
  const std::vector<std::string> quoted = {"\x1b[31mred",
                                           "a\rb",
                                           "tab\there",
                                           std::string("nul\0x", 5),
                                           "\xc2\x9b"
                                           "2J",
                                           "\xc2\x85next",
                                           "line\xe2\x80\xa8sep",
                                           "\xef\xbb\xbf"
                                           "bom",
                                           "0x1F",
                                           "0o17",
                                           "0b101",
                                           "1_000",
                                           "1:30",
                                           "Yes",
                                           "NO",
                                           "Off",
                                           "NULL",
                                           ".inf",
                                           "-.Inf",
                                           ".NaN",
                                           "2001-12-14",
                                           "2001-12-14t21:59:43.10-05:00",
                                           "=",
                                           "<<"};
  for (const std::string& s : quoted) {
    const std::string out = FormatReturn("m", wire::Value(s), OutputFormat::kYaml);
    ASSERT_EQ(out.substr(0, 4), "m: \"") << s;
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
      const auto c = static_cast<unsigned char>(out[i]);
      EXPECT_FALSE(c < 0x20 || c == 0x7f) << s << " wrote byte " << int(c);
      EXPECT_FALSE(c == 0xc2 && static_cast<unsigned char>(out[i + 1]) < 0xa0)
          << s << " wrote a C1 control";
    }
    EXPECT_EQ(out.find("\xe2\x80\xa8"), std::string::npos) << s;
    EXPECT_EQ(out.find("\xef\xbb\xbf"), std::string::npos) << s;
    EXPECT_EQ(YAML::Load(out)["m"].as<std::string>(), s) << out;
  }
  // Stray bytes are escaped one by one, as the JSON outputter does.
  EXPECT_EQ(FormatReturn("m", wire::Value(std::string("bad\xff")), OutputFormat::kYaml),
            "m: \"bad\\u00ff\"\n");
  for (const std::string s : {"web", "caf\xc3\xa9", "hello world", "1.2.3-beta"}) {
    EXPECT_EQ(FormatReturn("m", wire::Value(s), OutputFormat::kYaml), "m: " + s + "\n");
  }
}

TEST(OutputTest, TxtIsIdColonValueOnOneLine) {
  EXPECT_EQ(FormatReturn("web1", wire::Value("hello"), OutputFormat::kTxt), "web1: hello\n");
  EXPECT_EQ(FormatReturn("web1", wire::Value(7), OutputFormat::kTxt), "web1: 7\n");
  EXPECT_EQ(FormatReturn("web1", wire::Value::MapOf({{"a", 1}}), OutputFormat::kTxt),
            "web1: {'a': 1}\n");
}

}  // namespace
}  // namespace halite::client

namespace halite::client {
namespace {

// tests/data/salt/outputters: sample.json through stock Salt's outputters (capture.py there).
TEST(OutputTest, PlainOutputtersMatchStockSaltByteForByte) {
  const auto dir = std::filesystem::path(HALITE_TEST_DATA_DIR) / "salt" / "outputters";
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  std::function<wire::Value(const nlohmann::ordered_json&)> from = [&](const auto& j) {
    if (j.is_object()) {
      wire::Map m;
      for (const auto& [k, v] : j.items()) m.emplace_back(wire::Value(k), from(v));
      return wire::Value(std::move(m));
    }
    if (j.is_array()) {
      wire::Array a;
      for (const auto& v : j) a.push_back(from(v));
      return wire::Value(std::move(a));
    }
    if (j.is_string()) return wire::Value(j.template get<std::string>());
    if (j.is_boolean()) return wire::Value(j.template get<bool>());
    if (j.is_number_integer()) return wire::Value(j.template get<std::int64_t>());
    if (j.is_number_float()) return wire::Value(j.template get<double>());
    return wire::Value();
  };
  const wire::Value data = from(nlohmann::ordered_json::parse(slurp(dir / "sample.json")));
  struct Case {
    std::string name;
    OutputFormat format;
    OutputOptions options;
  };
  auto with = [](auto f) {
    OutputOptions o;
    f(o);
    return o;
  };
  for (const Case& c : std::vector<Case>{
           {"nested-plain", OutputFormat::kNested, {}},
           {"nested-color", OutputFormat::kNested, with([](auto& o) { o.color = true; })},
           {"nested-color-retcode", OutputFormat::kNested, with([](auto& o) {
              o.color = true;
              o.retcode = 1;
            })},
           {"raw", OutputFormat::kRaw, {}},
           {"pprint", OutputFormat::kPprint, {}},
           {"pprint-indent4", OutputFormat::kPprint, with([](auto& o) { o.indent = 4; })},
           {"txt", OutputFormat::kTxt, {}},
           {"newline_values_only", OutputFormat::kNewlineValuesOnly, {}},
           {"json", OutputFormat::kJson, {}},
           {"json-indent2", OutputFormat::kJson, with([](auto& o) { o.indent = 2; })},
           {"json-indent-1", OutputFormat::kJson, with([](auto& o) { o.indent = -1; })},
       }) {
    const std::string expected = slurp(dir / "expected" / (c.name + ".txt"));
    ASSERT_FALSE(expected.empty()) << c.name;
    EXPECT_EQ(DisplayOutput(data, c.format, c.options), expected) << c.name;
  }
}

}  // namespace
}  // namespace halite::client
