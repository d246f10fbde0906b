// Pillar parity with stock Salt: every tree in tests/data/pillar (captured from a stock
// salt-master 3007.8 by tests/data/pillar/capture.sh, run by hand) is served by a real
// halite-master, and each minion's `_pillar`, over the request port with that minion's grains
// and settings, must equal what the stock master gave it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "halite/master/minion_data.h"
#include "harness.h"
#include "raw_client.h"
#include "test_keys.h"

namespace halite::testing {
namespace {

namespace fs = std::filesystem;

fs::path TreesDir() { return fs::path(HALITE_TEST_DATA_DIR) / "pillar"; }

std::vector<std::string> Trees() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(TreesDir(), ec)) {
    if (e.is_directory() && fs::exists(e.path() / "master.yaml") && fs::exists(e.path() / "expected")) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json ReadJson(const fs::path& p) { return nlohmann::json::parse(ReadFileOrEmpty(p)); }

class PillarParityTest : public ::testing::TestWithParam<std::string> {};

TEST(PillarParityTrees, AllTreesArePresent) {
  // The parameterised test below would pass vacuously with no data.
  EXPECT_GE(Trees().size(), 4u) << TreesDir();
}

TEST_P(PillarParityTest, EveryMinionGetsWhatStockSaltGave) {
  const fs::path tree = TreesDir() / GetParam();
  YAML::Node master = YAML::LoadFile((tree / "master.yaml").string());
  YAML::Node minions = YAML::LoadFile((tree / "minions.yaml").string());

  MasterSpec spec;
  spec.auto_accept = true;
  std::ostringstream roots;
  for (const auto& env : master["pillar_roots"]) {
    roots << "  " << env.first.as<std::string>() << ": [";
    bool first = true;
    for (const auto& d : env.second) {
      roots << (first ? "" : ", ") << (tree / d.as<std::string>()).string();
      first = false;
    }
    roots << "]\n";
  }
  spec.pillar_roots = roots.str();
  YAML::Node rest = YAML::Clone(master);
  rest.remove("pillar_roots");
  if (rest.size() > 0) {
    YAML::Emitter out;
    out << rest;
    spec.extra_yaml = std::string(out.c_str()) + "\n";
  }
  TempDir tmp;
  MasterUnderTest m(tmp.path(), spec);
  m.Start();
  zmq::context_t ctx;
  const auto master_pub = MasterPub(m);
  int checked = 0;
  for (const auto& entry : minions) {
    const std::string id = entry.first.as<std::string>();
    const fs::path expected = tree / "expected" / (id + ".json");
    if (!fs::exists(expected)) continue;
    wire::Value grains = master::YamlNodeToValue(entry.second["grains"]);
    if (!grains.is_map()) grains = wire::Value::EmptyMap();
    grains.Set("id", id);
    // A stock minion sends saltenv and pillarenv as its options have them: None by default.
    std::string saltenv = "base";
    wire::Value extra = wire::Value::MapOf({{"saltenv", wire::Value()}});
    if (const YAML::Node cfg = entry.second["config"]) {
      if (cfg["saltenv"]) {
        saltenv = cfg["saltenv"].as<std::string>();
        extra.Set("saltenv", saltenv);
      }
      if (cfg["pillarenv"]) {
        extra.Set("pillarenv", cfg["pillarenv"].as<std::string>());
      } else if (cfg["pillarenv_from_saltenv"] && cfg["pillarenv_from_saltenv"].as<bool>()) {
        extra.Set("pillarenv", saltenv);  // the minion sets pillarenv from its saltenv
      }
    }
    RawMinion minion(id, NewKey(), "tcp://" + m.ip() + ":4506");
    auto auth = minion.Auth(ctx, master_pub);
    ASSERT_TRUE(auth.ok() && auth->session) << id;
    auto got = minion.Pillar(ctx, *auth->session, grains, saltenv, extra);
    ASSERT_TRUE(got.ok()) << id << ": " << got.error().ToString();
    EXPECT_EQ(nlohmann::json::parse(got->ToJson()), ReadJson(expected)) << GetParam() << " / " << id;
    ++checked;
    const fs::path override_in = tree / "expected" / (id + ".override.input.json");
    if (fs::exists(override_in)) {
      wire::Value with = extra;
      auto ov = wire::Value();
      // JSON to Value through YAML (JSON is YAML).
      ov = master::YamlNodeToValue(YAML::Load(ReadFileOrEmpty(override_in)));
      with.Set("pillar_override", ov);
      auto o = minion.Pillar(ctx, *auth->session, grains, saltenv, with);
      ASSERT_TRUE(o.ok()) << id << ": " << o.error().ToString();
      EXPECT_EQ(nlohmann::json::parse(o->ToJson()), ReadJson(tree / "expected" / (id + ".override.json")))
          << GetParam() << " / " << id << " with pillar_override";
    }
  }
  EXPECT_GT(checked, 0) << tree;
}

INSTANTIATE_TEST_SUITE_P(StockSalt3007, PillarParityTest, ::testing::ValuesIn(Trees()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace halite::testing
