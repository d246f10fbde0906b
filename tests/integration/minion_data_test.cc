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
  nlohmann::json PillarOf(const std::string& id, wire::Value grains) {
    auto key = wire::RsaPrivateKey::Generate(2048);
    EXPECT_TRUE(key.ok());
    RawMinion minion(id, *key, "tcp://" + master_->ip() + ":4506");
    auto auth = minion.Auth(ctx_, master_pub_);
    EXPECT_TRUE(auth.ok() && auth->session);
    if (!auth.ok() || !auth->session) return nullptr;
    auto pillar = minion.Pillar(ctx_, *auth->session, std::move(grains));
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

}  // namespace
}  // namespace halite::testing
