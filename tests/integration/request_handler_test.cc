// The checks of salt-wire 3.3 on every encrypted request (src/master/request_handler.cc), over
// the master's real request port: each broken request is answered "bad load", next to a
// correct one from the same minion that is served.
#include <gtest/gtest.h>

#include <ctime>
#include <functional>
#include <zmq.hpp>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"
#include "harness.h"
#include "raw_client.h"

namespace halite::testing {
namespace {

using namespace std::chrono_literals;

class RequestHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MasterSpec spec;
    spec.auto_accept = true;
    spec.extra_yaml = "request_server_ttl: 60\n";
    master_ = std::make_unique<MasterUnderTest>(tmp_.path(), spec);
    master_->Start();
    auto text = keys::ReadFile(master_->dir() / "pki" / "master.pub");
    ASSERT_TRUE(text.ok());
    auto pub = wire::RsaPublicKey::FromPem(*text);
    ASSERT_TRUE(pub.ok());
    master_pub_ = *pub;
    for (const char* id : {"web1", "db1"}) {
      auto key = wire::RsaPrivateKey::Generate(2048);
      ASSERT_TRUE(key.ok());
      minions_.push_back(std::make_unique<RawMinion>(id, *key, Endpoint()));
      auto auth = minions_.back()->Auth(ctx_, master_pub_);
      ASSERT_TRUE(auth.ok() && auth->session)
          << (auth.ok() ? auth->inner.ToJson() : auth.error().ToString());
      sessions_.push_back(*auth->session);
    }
  }

  std::string Endpoint() const { return "tcp://" + master_->ip() + ":4506"; }

  // `_master_opts` from web1 with `tweaks`: the reply (served) or the error ("bad load" is
  // kUnauthenticated).
  Result<wire::Value> MasterOpts(const std::function<void(RequestTweaks&)>& tweak = {}) {
    RequestTweaks tweaks;
    if (tweak) tweak(tweaks);
    return minions_[0]->Request(ctx_, sessions_[0], wire::Value::MapOf({{"cmd", "_master_opts"}}),
                                tweaks);
  }

  static void ExpectBadLoad(const Result<wire::Value>& r, const std::string& what) {
    ASSERT_FALSE(r.ok()) << what << " was served: " << r->ToJson();
    EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated) << what << ": " << r.error().ToString();
  }

  TempDir tmp_;
  zmq::context_t ctx_;
  std::unique_ptr<MasterUnderTest> master_;
  std::optional<wire::RsaPublicKey> master_pub_;
  std::vector<std::unique_ptr<RawMinion>> minions_;
  std::vector<wire::Crypticle> sessions_;
};

TEST_F(RequestHandlerTest, ARequestOlderThanRequestServerTtlIsRefused) {
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  auto fresh = MasterOpts([&](RequestTweaks& t) { t.ts = now - 5; });
  ASSERT_TRUE(fresh.ok()) << fresh.error().ToString();
  EXPECT_NE(fresh->Find("file_roots"), nullptr);
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.ts = now - 3600; }), "a request an hour old");
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.omit_ts = true; }), "a request without ts");
  // The minion is not locked out by them.
  EXPECT_TRUE(MasterOpts().ok());
}

TEST_F(RequestHandlerTest, EnvelopeIdAndLoadIdMustBeTheSameMinion) {
  // web1 encrypts with its own session key and signs its own tok, but claims db1 inside:
  // served, it would act as db1 (returns, mine, events in db1's name).
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.load_id = "db1"; }),
                "load id db1 in web1's envelope");
  // db1 in the envelope but web1's session key: the master cannot open it.
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.envelope_id = "db1"; }),
                "envelope id db1 on web1's ciphertext");
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) {
                  t.envelope_id = "db1";
                  t.load_id = "db1";
                }),
                "web1's ciphertext claiming db1 on both sides");
  EXPECT_TRUE(MasterOpts().ok());
}

TEST_F(RequestHandlerTest, ATokSignedByAnotherKeyIsRefused) {
  auto db_tok = minions_[1]->Token();
  ASSERT_TRUE(db_tok.ok());
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.tok = *db_tok; }),
                "web1's request with db1's tok");
  auto stranger = wire::RsaPrivateKey::Generate(2048);
  ASSERT_TRUE(stranger.ok());
  auto stranger_tok = stranger->X931Sign("salt");
  ASSERT_TRUE(stranger_tok.ok());
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.tok = *stranger_tok; }),
                "a tok of an unknown key");
  ExpectBadLoad(MasterOpts([&](RequestTweaks& t) { t.tok = "not a signature"; }),
                "a tok that is no signature");
  // db1's own tok on db1's own request is fine: the check is per minion, not global.
  RequestTweaks own_tok;
  own_tok.tok = *db_tok;
  auto db = minions_[1]->Request(ctx_, sessions_[1], wire::Value::MapOf({{"cmd", "_master_opts"}}),
                                 own_tok);
  EXPECT_TRUE(db.ok()) << db.error().ToString();
  EXPECT_TRUE(MasterOpts().ok());
}

}  // namespace
}  // namespace halite::testing
