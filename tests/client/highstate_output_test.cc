// The highstate outputter against stock Salt 3007.8's: tests/data/salt/highstate/returns/*.json
// fed through salt.output's highstate outputter by capture.py there, for every
// --state-output mode, with and without colour and --state-verbose; halite's text must be
// byte for byte the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "halite/client/output.h"

namespace halite::client {
namespace {

const std::filesystem::path kData =
    std::filesystem::path(HALITE_TEST_DATA_DIR) / "salt" / "highstate";

// Key order matters (the states' order before sorting by __run_num__, a batch's display).
wire::Value FromOrderedJson(const nlohmann::ordered_json& j) {
  if (j.is_object()) {
    wire::Map m;
    for (const auto& [k, v] : j.items()) m.emplace_back(wire::Value(k), FromOrderedJson(v));
    return wire::Value(std::move(m));
  }
  if (j.is_array()) {
    wire::Array a;
    for (const auto& v : j) a.push_back(FromOrderedJson(v));
    return wire::Value(std::move(a));
  }
  if (j.is_string()) return wire::Value(j.get<std::string>());
  if (j.is_boolean()) return wire::Value(j.get<bool>());
  if (j.is_number_integer()) return wire::Value(j.get<std::int64_t>());
  if (j.is_number_float()) return wire::Value(j.get<double>());
  return wire::Value();
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HighstateOutputTest, EveryModeMatchesStockSaltByteForByte) {
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData / "returns")) {
    const std::string name = entry.path().stem().string();
    const wire::Value data = FromOrderedJson(nlohmann::ordered_json::parse(Slurp(entry.path())));
    for (const auto& file : std::filesystem::directory_iterator(kData / "expected" / name)) {
      const std::string stem = file.path().stem().string();  // MODE-COLOR-VERBOSE
      const auto a = stem.find('-');
      const auto b = stem.rfind('-');
      OutputOptions options;
      options.state_output = stem.substr(0, a);
      options.color = stem.substr(a + 1, b - a - 1) == "color";
      options.state_verbose = stem.substr(b + 1) == "verbose";
      EXPECT_EQ(DisplayOutput(data, OutputFormat::kHighstate, options), Slurp(file.path()))
          << name << "/" << stem;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 8 * 24);
}

// What Salt's try_printout does when the highstate outputter raises: the nested outputter.
TEST(HighstateOutputTest, AReturnThatIsNotAStateReturnFallsBackToNested) {
  const wire::Value data = wire::Value::MapOf(
      {{"m1", wire::Value::MapOf({{"bad_|-name", wire::Value::MapOf({{"result", true}})}})}});
  EXPECT_EQ(DisplayOutput(data, OutputFormat::kHighstate, {}),
            DisplayOutput(data, OutputFormat::kNested, {}));
  EXPECT_EQ(DisplayOutput(wire::Value::MapOf({{"m1", true}}), OutputFormat::kHighstate, {}),
            "m1:\n    True\n");
}

}  // namespace
}  // namespace halite::client
