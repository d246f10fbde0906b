// Pillar compilation (src/pillar, rendered by halite-render) as a minion gets it: a real
// master, `_pillar` over its request port, the reply opened with the minion's own key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "harness.h"
#include "raw_client.h"

namespace halite::testing {
namespace {

class MinionDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml = "render_timeout_ms: 4000\nrender_processes: 2\n";
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    const auto pillar = master_->dir() / "pillar";
    WriteFile(pillar / "top.sls",
              "base:\n"
              "  '*':\n"
              "    - common\n"
              "  'web*':\n"
              "    - web\n"
              "    - missing.sls.is.skipped\n"
              "  'G@role:db and not web*':\n"
              "    - match: compound\n"
              "    - db\n"
              "  'role:db':\n"
              "    - match: grain\n"
              "    - sizes\n"
              "  'nobody*':\n"
              "    - secret\n");
    WriteFile(pillar / "common.sls", "app:\n  name: common\n  port: 80\nlist: [1, 2]\n");
    WriteFile(pillar / "web.sls", "app:\n  port: 8080\n  tls: true\nlist: [3]\nweb_only: yes\n");
    WriteFile(pillar / "db" / "init.sls", "db:\n  engine: pg\n");
    WriteFile(pillar / "sizes.sls", "db:\n  size: 10\n");
    WriteFile(pillar / "secret.sls", "secret: do-not-send\n");
    master_->Start();
    auto text = keys::ReadFile(master_->dir() / "pki" / "master.pub");
    ASSERT_TRUE(text.ok());
    master_pub_ = *wire::RsaPublicKey::FromPem(*text);
  }

  // The pillar `id` gets for `grains`, as JSON (objects compare without order).
  nlohmann::json PillarOf(const std::string& id, wire::Value grains,
                          const wire::Value& extra = wire::Value()) {
    auto key = wire::RsaPrivateKey::Generate(2048);
    EXPECT_TRUE(key.ok());
    RawMinion minion(id, *key, "tcp://" + master_->ip() + ":4506");
    auto auth = minion.Auth(ctx_, master_pub_);
    EXPECT_TRUE(auth.ok() && auth->session);
    if (!auth.ok() || !auth->session) return nullptr;
    auto pillar = minion.Pillar(ctx_, *auth->session, std::move(grains), "base", extra);
    EXPECT_TRUE(pillar.ok()) << pillar.error().ToString();
    return pillar.ok() ? nlohmann::json::parse(pillar->ToJson()) : nullptr;
  }

  TempDir tmp_;
  zmq::context_t ctx_;
  std::unique_ptr<MasterUnderTest> master_;
  std::optional<wire::RsaPublicKey> master_pub_;
};

TEST_F(MinionDataTest, TopFileTargetsMergeInOrderMapsDeepAndListsReplaced) {
  // common, then web over it: nested maps merge key by key, a later list replaces, and the
  // missing sls is reported in _errors (Salt's words) without losing the rest.
  EXPECT_EQ(PillarOf("web1", wire::Value::MapOf({{"role", "web"}})), nlohmann::json::parse(R"({
    "app": {"name": "common", "port": 8080, "tls": true},
    "list": [3],
    "web_only": true,
    "_errors": ["Specified SLS 'missing.sls.is.skipped' in environment 'base' is not available on the salt master"]})"));
}

TEST_F(MinionDataTest, CompoundAndGrainMatchersPickTheirSls) {
  // db (compound, from db/init.sls) and sizes (grain matcher) both merge into db.
  EXPECT_EQ(PillarOf("db1", wire::Value::MapOf({{"role", "db"}})), nlohmann::json::parse(R"({
    "app": {"name": "common", "port": 80},
    "list": [1, 2],
    "db": {"engine": "pg", "size": 10}})"));
  // A grain that does not match leaves only what '*' gives.
  EXPECT_EQ(PillarOf("db2", wire::Value::MapOf({{"role", "cache"}})), nlohmann::json::parse(R"({
    "app": {"name": "common", "port": 80},
    "list": [1, 2]})"));
}

TEST_F(MinionDataTest, TheAuthenticatedIdWinsOverAnIdGrain) {
  // web1 claims to be nobody1 in its grains: targets see the id it signed in with.
  nlohmann::json pillar =
      PillarOf("web1", wire::Value::MapOf({{"id", "nobody1"}, {"role", "web"}}));
  ASSERT_TRUE(pillar.is_object()) << pillar.dump();
  EXPECT_FALSE(pillar.contains("secret")) << pillar.dump();
  EXPECT_TRUE(pillar.value("web_only", false)) << pillar.dump();
}

TEST_F(MinionDataTest, JinjaPillarWithIncludesOverrideAndErrorsOverTheSocket) {
  // A tree as fleets write it: a Jinja top file, map.jinja with grains.filter_by, import_yaml,
  // include with defaults, and one sls that fails; `pillar_override` from the request (what
  // `state.apply pillar=...` sends) is merged last.
  const auto pillar = master_->dir() / "pillar";
  WriteFile(pillar / "top.sls",
            "base:\n"
            "  '*':\n"
            "    - common\n"
            "{% if grains.get('os_family') == 'RedHat' %}\n"
            "    - webapp\n"
            "{% endif %}\n"
            "    - broken\n");
  WriteFile(pillar / "webapp" / "map.jinja",
            "{% set web = salt['grains.filter_by']({'Debian': {'pkg': 'apache2'}, "
            "'RedHat': {'pkg': 'httpd'}}) %}\n");
  WriteFile(pillar / "webapp" / "defaults.yaml", "port: 80\nworkers: 4\n");
  WriteFile(pillar / "webapp" / "init.sls",
            "{% from 'webapp/map.jinja' import web with context %}\n"
            "{% import_yaml 'webapp/defaults.yaml' as d %}\n"
            "include:\n"
            "  - .vhost:\n"
            "      defaults: {name: {{ grains['id'] }}}\n"
            "      key: web:vhost\n"
            "web:\n"
            "  pkg: {{ web.pkg }}\n"
            "  port: {{ d.port }}\n"
            "  id: {{ grains['id'] | yaml_encode }}\n");
  WriteFile(pillar / "webapp" / "vhost.sls", "server_name: {{ name }}.example\n");
  WriteFile(pillar / "broken.sls", "x: {{ no_such_variable }}\n");
  nlohmann::json got = PillarOf(
      "web7", wire::Value::MapOf({{"os_family", "RedHat"}, {"role", "web"}}),
      wire::Value::MapOf({{"pillar_override",
                           wire::Value::MapOf({{"web", wire::Value::MapOf({{"port", 8080}})}})}}));
  EXPECT_EQ(got, nlohmann::json::parse(R"({
    "app": {"name": "common", "port": 80},
    "list": [1, 2],
    "web": {"pkg": "httpd", "port": 8080, "id": "web7", "vhost": {"server_name": "web7.example"}},
    "_errors": ["Rendering SLS 'broken' failed. Please see master log for details."]})"))
      << got.dump();
  // The master log says why, naming the file.
  EXPECT_TRUE(WaitFor(
      [&] { return master_->Log().find("'no_such_variable' is undefined") != std::string::npos; },
      std::chrono::seconds(10)))
      << master_->Log();
}

TEST_F(MinionDataTest, HostileTemplatesBecomeErrorsAndTheMasterKeepsServing) {
  // A loop that never ends (killed at render_timeout_ms), output past render_max_output's
  // default 16 MiB, unbounded recursion, /etc/shadow and ../ includes: each sls fails with
  // Salt's _errors entry, the rest of the pillar is served, and the next request is answered.
  const auto pillar = master_->dir() / "pillar";
  WriteFile(
      pillar / "top.sls",
      "base:\n  '*':\n    - common\n    - spin\n    - huge\n    - deep\n    - shadow\n    - up\n");
  WriteFile(
      pillar / "spin.sls",
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}a: 1\n");
  WriteFile(pillar / "huge.sls", "a: {{ 'x' * 20000000 }}\n");
  WriteFile(pillar / "deep.sls", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}a: {{ f(0) }}\n");
  WriteFile(pillar / "shadow.sls", "a: \"{% include '/etc/shadow' %}\"\n");
  WriteFile(pillar / "up.sls", "a: \"{% include '../../../../etc/passwd' %}\"\n");
  nlohmann::json got = PillarOf("m9", wire::Value::EmptyMap());
  nlohmann::json errors = nlohmann::json::array();
  for (const char* sls : {"spin", "huge", "deep", "shadow", "up"}) {
    errors.push_back(std::string("Rendering SLS '") + sls +
                     "' failed. Please see master log for details.");
  }
  EXPECT_EQ(got, nlohmann::json({{"app", {{"name", "common"}, {"port", 80}}},
                                 {"list", {1, 2}},
                                 {"_errors", errors}}))
      << got.dump();
  EXPECT_TRUE(master_->Alive());
  WriteFile(pillar / "top.sls", "base:\n  '*':\n    - common\n");
  EXPECT_EQ(PillarOf("m10", wire::Value::EmptyMap()),
            nlohmann::json::parse(R"({"app": {"name": "common", "port": 80}, "list": [1, 2]})"));
}

TEST_F(MinionDataTest, CheckNamesAnSlsThatDoesNotParse) {
  const auto pillar = master_->dir() / "pillar";
  auto ok = testing::Run(
      {BinaryPath("halite-master").string(), "--check", "-c", master_->config().string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  WriteFile(pillar / "apps" / "bad.sls", "{% for x in %}\n");
  auto bad = testing::Run(
      {BinaryPath("halite-master").string(), "--check", "-c", master_->config().string()});
  EXPECT_EQ(bad.exit_code, 78) << bad.out << bad.err;
  EXPECT_NE(bad.err.find((pillar / "apps" / "bad.sls").string() + ": Jinja syntax error"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace halite::testing
