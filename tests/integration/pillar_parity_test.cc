// Pillar parity with stock Salt: every tree in tests/data/pillar (captured from a stock
// salt-master 3007.8 by tests/data/pillar/capture.sh, run by hand) is served by a real
// halite-master, and each minion's `_pillar`, over the request port with that minion's grains
// and settings, must equal what the stock master gave it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "halite/master/minion_data.h"
#include "halite/wire/target.h"
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
    // errors_top_list has no expected pillar: stock Salt crashes on it (TopFileThatIsAList).
    if (e.is_directory() && fs::exists(e.path() / "master.yaml") &&
        fs::exists(e.path() / "expected") &&
        !fs::exists(e.path() / "expected" / "stock-behaviour.txt")) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Python's json writes inf and nan bare (not JSON); both sides spell them as strings here.
nlohmann::json ReadJson(const fs::path& p) {
  std::string text = ReadFileOrEmpty(p);
  for (const char* bare : {"-Infinity", "Infinity", "NaN"}) {
    const std::string quoted = std::string("\"") + bare + "\"";
    for (std::size_t at = 0; (at = text.find(std::string(": ") + bare, at)) != std::string::npos;) {
      if (bare[0] != '-' && at > 0 && text[at + 2] != bare[0]) break;
      text.replace(at + 2, std::strlen(bare), quoted);
      at += 2 + quoted.size();
    }
  }
  return nlohmann::json::parse(text);
}

nlohmann::json ToJson(const wire::Value& v) {
  if (v.is_nil()) return nullptr;
  if (auto b = v.boolean(); v.is_bool()) return *b;
  if (v.is_int()) {
    if (auto i = v.int64()) return *i;
    return *v.uint64();
  }
  if (v.is_float()) {
    const double d = *v.float64();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return d;
  }
  if (const std::string* s = v.str()) return *s;
  if (const wire::Array* a = v.array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : *a) out.push_back(ToJson(x));
    return out;
  }
  nlohmann::json out = nlohmann::json::object();
  if (const wire::Map* m = v.map()) {
    for (const auto& [k, x] : *m) {
      // json.dumps spells non-string keys as JSON does: true, false, null, numbers.
      std::string key = k.str()       ? *k.str()
                        : k.is_nil()  ? "null"
                        : k.is_bool() ? (*k.boolean() ? "true" : "false")
                                      : ToJson(k).dump();
      out[key] = ToJson(x);
    }
  }
  return out;
}

class PillarParityTest : public ::testing::TestWithParam<std::string> {};

TEST(PillarParityTrees, AllTreesArePresent) {
  // The parameterised test below would pass vacuously with no data.
  EXPECT_GE(Trees().size(), 19u) << TreesDir();
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
  if (rest["id"]) {  // the master's own id (the requester of a template's mine.get)
    spec.id = rest["id"].as<std::string>();
    rest.remove("id");
  }
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
  // A tree with mine data (expected/<id>.mine.json: what the stock master stored after
  // `mine.update`): every minion signs in, fetches its pillar once (so the master caches its
  // grains, as the stock minions' start-up did) and sends its mine before any pillar is
  // compared; templates read the mine through saltutil.runner('mine.get').
  std::map<std::string, RawMinion> signed_in;
  std::map<std::string, wire::Crypticle> sessions;
  for (const auto& entry : minions) {
    const std::string id = entry.first.as<std::string>();
    RawMinion minion(id, NewKey(), "tcp://" + m.ip() + ":4506");
    auto auth = minion.Auth(ctx, master_pub);
    ASSERT_TRUE(auth.ok() && auth->session) << id;
    const fs::path mine = tree / "expected" / (id + ".mine.json");
    if (fs::exists(tree / "capture-mine")) {
      wire::Value grains = master::YamlNodeToValue(entry.second["grains"]);
      if (!grains.is_map()) grains = wire::Value::EmptyMap();
      grains.Set("id", id);
      ASSERT_TRUE(minion.Pillar(ctx, *auth->session, grains).ok()) << id;
      if (fs::exists(mine)) {
        wire::Value load = wire::Value::MapOf({{"cmd", "_mine"}, {"id", id}});
        load.Set("data", master::YamlNodeToValue(YAML::Load(ReadFileOrEmpty(mine))));
        auto stored = minion.Request(ctx, *auth->session, std::move(load));
        ASSERT_TRUE(stored.ok() && stored->boolean().value_or(false)) << id << " _mine";
      }
    }
    sessions.emplace(id, *auth->session);
    signed_in.emplace(id, std::move(minion));
  }
  int checked = 0;
  for (const auto& entry : minions) {
    const std::string id = entry.first.as<std::string>();
    const fs::path expected = tree / "expected" / (id + ".json");
    if (!fs::exists(expected)) continue;
    wire::Value grains = master::YamlNodeToValue(entry.second["grains"]);
    if (!grains.is_map()) grains = wire::Value::EmptyMap();
    grains.Set("id", id);
    // What `pillar.items` sends: saltenv None, pillarenv from the minion's options
    // (pillarenv, or its saltenv under pillarenv_from_saltenv). The minion's own refresh
    // (expected/<id>.raw.json) sends its saltenv and its pillarenv option as they are.
    std::string saltenv = "base";
    wire::Value extra = wire::Value::MapOf({{"saltenv", wire::Value()}});
    wire::Value raw_extra = wire::Value::MapOf({{"saltenv", wire::Value()}});
    if (const YAML::Node cfg = entry.second["config"]) {
      if (cfg["saltenv"]) raw_extra.Set("saltenv", cfg["saltenv"].as<std::string>());
      if (cfg["pillarenv"]) {
        extra.Set("pillarenv", cfg["pillarenv"].as<std::string>());
        raw_extra.Set("pillarenv", cfg["pillarenv"].as<std::string>());
      } else if (cfg["pillarenv_from_saltenv"] && cfg["pillarenv_from_saltenv"].as<bool>() &&
                 cfg["saltenv"]) {
        extra.Set("pillarenv", cfg["saltenv"].as<std::string>());
      }
    }
    RawMinion& minion = signed_in.at(id);
    const wire::Crypticle& session = sessions.at(id);
    auto got = minion.Pillar(ctx, session, grains, saltenv, extra);
    ASSERT_TRUE(got.ok()) << id << ": " << got.error().ToString();
    EXPECT_EQ(ToJson(*got), ReadJson(expected)) << GetParam() << " / " << id;
    ++checked;
    const fs::path raw = tree / "expected" / (id + ".raw.json");
    if (fs::exists(raw)) {
      auto r = minion.Pillar(ctx, session, grains, saltenv, raw_extra);
      ASSERT_TRUE(r.ok()) << id << ": " << r.error().ToString();
      nlohmann::json want = ReadJson(raw);
      want.erase("schedule");  // added by the minion, not the master
      EXPECT_EQ(ToJson(*r), want) << GetParam() << " / " << id << " refresh";
    }
    const fs::path override_in = tree / "expected" / (id + ".override.input.json");
    if (fs::exists(override_in)) {
      wire::Value with = extra;
      auto ov = wire::Value();
      // JSON to Value through YAML (JSON is YAML).
      ov = master::YamlNodeToValue(YAML::Load(ReadFileOrEmpty(override_in)));
      with.Set("pillar_override", ov);
      auto o = minion.Pillar(ctx, session, grains, saltenv, with);
      ASSERT_TRUE(o.ok()) << id << ": " << o.error().ToString();
      EXPECT_EQ(ToJson(*o), ReadJson(tree / "expected" / (id + ".override.json")))
          << GetParam() << " / " << id << " with pillar_override";
    }
  }
  EXPECT_GT(checked, 0) << tree;
}

TEST(PillarParityTrees, TopFileThatIsAListIsAnErrorNotACrash) {
  // Stock 3007.8 raises AttributeError in _pillar on this tree and its minion never starts
  // (expected/stock-behaviour.txt); halite answers with an _errors entry instead.
  const fs::path tree = TreesDir() / "errors_top_list";
  ASSERT_TRUE(fs::exists(tree / "expected" / "stock-behaviour.txt"));
  MasterSpec spec;
  spec.auto_accept = true;
  spec.pillar_roots = "  base: [" + (tree / "roots" / "base").string() + "]\n";
  TempDir tmp;
  MasterUnderTest m(tmp.path(), spec);
  m.Start();
  zmq::context_t ctx;
  RawMinion minion("web01", NewKey(), "tcp://" + m.ip() + ":4506");
  auto auth = minion.Auth(ctx, MasterPub(m));
  ASSERT_TRUE(auth.ok() && auth->session);
  auto got = minion.Pillar(ctx, *auth->session, wire::Value::MapOf({{"id", "web01"}}));
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(ToJson(*got),
            nlohmann::json::parse(
                R"({"_errors": ["Error encountered while rendering pillar top file."]})"));
}

INSTANTIATE_TEST_SUITE_P(StockSalt3007, PillarParityTest, ::testing::ValuesIn(Trees()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace halite::testing
