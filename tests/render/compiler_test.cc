// Pillar compilation (src/pillar) over real trees, rendered by real halite-render processes:
// top files with Jinja and matchers, includes in every form, merging strategies, and errors in
// Salt's words. The same paths over a socket (`_pillar`) are in tests/integration.
#include "halite/pillar/compiler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "render_testing.h"

namespace halite::pillar {
namespace {

using testing_support::Tree;

class CompilerTest : public ::testing::Test {
 protected:
  CompilerTest() {
    render::PoolOptions o;
    o.program = testing_support::RendererProgram();
    o.processes = 2;
    o.timeout = std::chrono::seconds(20);
    renderer_ = render::MakeProcessPool(o, render::RenderSettings{});
    settings_.roots = {{"base", {tree_.root()}}};
  }

  nlohmann::json Compile(const std::string& id, wire::Value grains = wire::Value::EmptyMap(),
                         wire::Value override_data = wire::Value()) {
    grains.Set("id", id);
    PillarCompiler compiler(settings_, *renderer_);
    PillarRequest req;
    req.id = id;
    req.grains = std::move(grains);
    req.pillar_override = std::move(override_data);
    return nlohmann::json::parse(compiler.Compile(req).ToJson());
  }

  Tree tree_;
  std::unique_ptr<render::Renderer> renderer_;
  PillarSettings settings_;
};

TEST_F(CompilerTest, JinjaTopMatchersGlobsOrderAndIgnoreMissing) {
  tree_.Write("top.sls",
              "base:\n"
              "  '*':\n"
              "    - common\n"
              "{% if grains.get('role') == 'web' %}\n"
              "    - web\n"
              "{% endif %}\n"
              "  'os_family:Debian':\n"
              "    - match: grain\n"
              "    - users.*\n"
              "  'db*':\n"
              "    - db\n"
              "    - not.there\n"
              "    - ignore_missing: True\n"
              "  'G@role:web and not db*':\n"
              "    - last\n"
              "    - order: 10\n"
              "  'first*':\n"
              "    - first\n"
              "    - order: -1\n");
  tree_.Write("common.sls", "who: common\n");
  tree_.Write("web.sls", "who: web\nweb: true\n");
  tree_.Write("users/alice.sls", "users: {alice: 1}\n");
  tree_.Write("users/bob.sls", "users: {bob: 2}\n");
  tree_.Write("db/init.sls", "db: true\n");
  tree_.Write("last.sls", "who: last\n");
  tree_.Write("first.sls", "who: first\n");
  EXPECT_EQ(
      Compile("web1", wire::Value::MapOf({{"role", "web"}, {"os_family", "Debian"}})),
      nlohmann::json::parse(R"({"who": "last", "web": true, "users": {"alice": 1, "bob": 2}})"));
  EXPECT_EQ(Compile("db1", wire::Value::MapOf({{"os_family", "RedHat"}})),
            nlohmann::json::parse(R"({"who": "common", "db": true})"));
  // order: -1 puts 'first*' before '*', so common (merged later) wins.
  EXPECT_EQ(Compile("first1"), nlohmann::json::parse(R"({"who": "common"})"));
}

TEST_F(CompilerTest, IncludesListRelativeDefaultsKeyCyclesAndMissing) {
  tree_.Write("top.sls", "base:\n  '*':\n    - app\n");
  tree_.Write("app/init.sls",
              "include:\n"
              "  - .child\n"
              "  - shared\n"
              "  - tmpl:\n"
              "      defaults: {port: 8443}\n"
              "      key: nested:deep\n"
              "  - missing\n"
              "who: app\n");
  tree_.Write("app/child.sls", "include:\n  - app\nchild: true\nwho: child\n");
  tree_.Write("shared.sls", "shared: [1]\n");
  tree_.Write("tmpl.sls", "port: {{ port }}\n");
  EXPECT_EQ(Compile("m1"), nlohmann::json::parse(R"({
    "child": true, "who": "app", "shared": [1], "nested": {"deep": {"port": 8443}},
    "_errors": ["Specified SLS 'missing' in environment 'base' is not available on the salt master"]})"));
}

TEST_F(CompilerTest, MergingStrategiesAndMergeLists) {
  tree_.Write("top.sls", "base:\n  '*':\n    - a\n    - b\n");
  tree_.Write("a.sls", "k: {x: 1, l: [1, 2], keep: a}\ntop_a: 1\n");
  tree_.Write("b.sls", "k: {y: 2, l: [2, 3]}\n");
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(
                              R"({"k": {"x": 1, "l": [2, 3], "keep": "a", "y": 2}, "top_a": 1})"));
  settings_.merge_lists = true;
  EXPECT_EQ(
      Compile("m"),
      nlohmann::json::parse(R"({"k": {"x": 1, "l": [1, 2, 3], "keep": "a", "y": 2}, "top_a": 1})"));
  settings_.merge_lists = false;
  settings_.merging_strategy = "overwrite";
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(R"({"k": {"y": 2, "l": [2, 3]}, "top_a": 1})"));
  settings_.merging_strategy = "aggregate";
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(R"({"k": {"y": 2, "l": [2, 3]}, "top_a": 1})"));
}

TEST_F(CompilerTest, ErrorsInSaltsWordsAndTheRestIsServed) {
  tree_.Write("top.sls", "base:\n  '*':\n    - good\n    - broken\n    - alist\n    - undefined\n");
  tree_.Write("good.sls", "good: 1\n");
  tree_.Write("broken.sls", "{% if %}\n");
  tree_.Write("alist.sls", "- 1\n- 2\n");
  tree_.Write("undefined.sls", "x: {{ nope }}\n");
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(R"({"good": 1, "_errors": [
    "Rendering SLS 'broken' failed. Please see master log for details.",
    "SLS 'alist' does not render to a dictionary",
    "Rendering SLS 'undefined' failed. Please see master log for details."]})"));
  settings_.safe_render_error = false;
  auto unsafe = Compile("m");
  ASSERT_EQ(unsafe["_errors"].size(), 3u) << unsafe.dump();
  EXPECT_EQ(
      unsafe["_errors"][2].get<std::string>().rfind(
          "Rendering SLS 'undefined' failed, render error:\nJinja variable 'nope' is undefined", 0),
      0u)
      << unsafe.dump();
}

TEST_F(CompilerTest, ATopFileThatFailsIsReportedAndNothingElseIsRendered) {
  tree_.Write("top.sls", "base:\n  '*':\n    - good\n{{ grains['nope'] }}\n");
  tree_.Write("good.sls", "good: 1\n");
  auto p = Compile("m");
  ASSERT_EQ(p.size(), 1u) << p.dump();
  ASSERT_EQ(p["_errors"].size(), 1u) << p.dump();
  EXPECT_EQ(p["_errors"][0].get<std::string>().rfind(
                "Rendering Primary Top file failed, render error:\n", 0),
            0u)
      << p.dump();
}

TEST_F(CompilerTest, OverrideIsMergedLastAndEnvironmentsAreSelected) {
  tree_.Write("top.sls", "base:\n  '*':\n    - common\n");
  tree_.Write("common.sls", "a: {b: 1, c: 2}\n");
  tree_.WriteIn("dev", "top.sls", "dev:\n  '*':\n    - devonly\n");
  tree_.WriteIn("dev", "devonly.sls", "dev: true\n");
  settings_.roots.emplace_back("dev", std::vector<std::string>{tree_.Root("dev")});
  EXPECT_EQ(Compile("m", wire::Value::EmptyMap(),
                    wire::Value::MapOf({{"a", wire::Value::MapOf({{"c", 9}})}})),
            nlohmann::json::parse(R"({"a": {"b": 1, "c": 9}, "dev": true})"));
  settings_.pillarenv = "dev";
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(R"({"dev": true})"));
  settings_.pillarenv.clear();
  settings_.merging_strategy = "none";  // only the minion's saltenv (base) is compiled
  EXPECT_EQ(Compile("m"), nlohmann::json::parse(R"({"a": {"b": 1, "c": 2}})"));
}

TEST_F(CompilerTest, NodegroupMatcher) {
  tree_.Write("top.sls", "base:\n  webs:\n    - match: nodegroup\n    - web\n");
  tree_.Write("web.sls", "web: true\n");
  settings_.nodegroups = {{"webs", {"L@web1,web2", "or", "G@role:web"}}};
  EXPECT_EQ(Compile("web2"), nlohmann::json::parse(R"({"web": true})"));
  EXPECT_EQ(Compile("x", wire::Value::MapOf({{"role", "web"}})),
            nlohmann::json::parse(R"({"web": true})"));
  EXPECT_EQ(Compile("db1"), nlohmann::json::parse(R"({})"));
}

TEST_F(CompilerTest, ExtPillarBuiltinsInOrderAndFirst) {
  tree_.Write("top.sls", "base:\n  '*':\n    - s\n");
  tree_.Write("s.sls", "from_sls: {{ pillar.get('ext', 'unset') }}\nshared: sls\n");
  tree_.Write("../ft/hosts/m1/db/password", "hunter2\n");
  tree_.Write("../ft/hosts/other/secret", "no\n");
  const std::string ft = tree_.Root("base") + "/../ft";
  settings_.ext_pillar = wire::Value(
      wire::Array{wire::Value::MapOf({{"cmd_yaml", "echo 'ext: %s'; echo 'shared: ext'"}}),
                  wire::Value::MapOf({{"cmd_json", "echo '{\"j\": [1, 2]}'"}}),
                  wire::Value::MapOf({{"file_tree", wire::Value::MapOf({{"root_dir", ft}})}}),
                  wire::Value::MapOf({{"no_such_ext", "x"}})});
  // After the sls (Salt's default): ext data wins, and templates saw no `pillar`.
  EXPECT_EQ(Compile("m1"), nlohmann::json::parse(R"({
    "from_sls": "unset", "shared": "ext", "ext": "m1", "j": [1, 2], "db": {"password": "hunter2"}})"));
  settings_.ext_pillar_first = true;
  EXPECT_EQ(Compile("m1"), nlohmann::json::parse(R"({
    "from_sls": "m1", "shared": "sls", "ext": "m1", "j": [1, 2], "db": {"password": "hunter2"}})"));
  settings_.ext_pillar = wire::Value("not a list");
  EXPECT_EQ(Compile("m1")["_errors"],
            nlohmann::json::parse(R"(["The \"ext_pillar\" option is malformed"])"));
}

TEST_F(CompilerTest, CheckTreeNamesTheFilesThatDoNotParse) {
  tree_.Write("top.sls", "base:\n  '*':\n    - good\n");
  tree_.Write("good.sls", "a: {{ grains['x'] }}\n");
  tree_.Write("sub/bad.sls", "{% for %}\n");
  PillarCompiler compiler(settings_, *renderer_);
  auto problems = compiler.CheckTree();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind(tree_.root() + "/sub/bad.sls: Jinja syntax error", 0), 0u)
      << problems[0];
}

}  // namespace
}  // namespace halite::pillar
