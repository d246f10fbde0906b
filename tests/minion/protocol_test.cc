#include "halite/minion/protocol.h"

#include <gtest/gtest.h>

#include <regex>

#include "halite/minion/functions.h"
#include "halite/minion/keys.h"
#include "test_util.h"

namespace halite::minion {
namespace {

using testing::Json;
using testing::LoadVectors;
using testing::ToValue;
using testing::Unhex;
using testing::Wire;
using wire::Value;

wire::RsaPrivateKey VectorKey(const std::string& name) {
  return wire::RsaPrivateKey::FromPem(
             testing::ReadTestFile(testing::VectorPath("key_" + name + ".pem")))
      .value();
}

std::string PublicPem(const wire::RsaPrivateKey& key) {
  return wire::CleanKey(key.PublicKey().ToPem());
}

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auth_ = LoadVectors("auth.json");
    req_ = LoadVectors("reqchannel.json");
    pub_ = LoadVectors("publish.json");
  }
  Json auth_, req_, pub_;
  wire::RsaPrivateKey minion_ = VectorKey("minion");
  wire::RsaPrivateKey master_ = VectorKey("master");
};

// ---------------------------------------------------------------- _auth request

TEST_F(ProtocolTest, FirstContactAuthRequestIsByteExact) {
  const Json& v = auth_["first_contact"];
  std::string pub = PublicPem(minion_);
  ASSERT_EQ(pub, v["request_envelope"]["load"]["pub"].get<std::string>());
  AuthRequestParams p;
  p.id = "minion1";
  p.public_pem = pub;
  auto request = BuildAuthRequest(p, v["request_envelope"]["load"]["nonce"].get<std::string>());
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(wire::HexEncode(wire::Pack(*request)), v["request_wire_hex"].get<std::string>());
}

TEST_F(ProtocolTest, AuthRequestWithPinnedMasterCarriesTheEncryptedToken) {
  const Json& v = auth_["with_token"];
  std::string pub = PublicPem(minion_);
  wire::RsaPublicKey master_pub = master_.PublicKey();
  std::string token = v["token_plain_ascii"].get<std::string>();
  AuthRequestParams p;
  p.id = "minion1";
  p.public_pem = pub;
  p.master_key = &master_pub;
  p.token = token;
  auto request = BuildAuthRequest(p, v["request_envelope"]["load"]["nonce"].get<std::string>());
  ASSERT_TRUE(request.ok());
  Value* load = request->Find("load");
  ASSERT_NE(load, nullptr);
  // The token is OAEP (random): it must decrypt to the token; with the vector's ciphertext in
  // its place the whole request is byte-exact.
  const std::string* token_ct = load->FindStr("token");
  ASSERT_NE(token_ct, nullptr);
  EXPECT_EQ(master_.Decrypt(*token_ct, wire::OaepHash::kSha1).value(), token);
  load->Set("token", Value::Bin(Unhex(v["request_envelope"]["load"]["token"]["hex"])));
  EXPECT_EQ(wire::HexEncode(wire::Pack(*request)), v["request_wire_hex"].get<std::string>());
}

// ---------------------------------------------------------------- _auth reply

AuthVerifyParams Params(const wire::RsaPrivateKey& key, const std::string* pinned,
                        std::string_view token, std::string_view nonce) {
  AuthVerifyParams p;
  p.minion_key = &key;
  p.pinned_master_pub = pinned;
  p.token_sent = pinned != nullptr;
  p.token = token;
  p.nonce = nonce;
  return p;
}

TEST_F(ProtocolTest, AcceptsTheFirstContactReplyAndPinsTheMasterKey) {
  const Json& v = auth_["first_contact"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  auto result =
      VerifyAuthReply(reply, Params(minion_, nullptr, "", "0123456789abcdef0123456789abcdef"));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->status, AuthStatus::kAccepted);
  const Json& expected = v["minion_side_result"];
  EXPECT_EQ(result->creds.aes, expected["aes"].get<std::string>());
  EXPECT_EQ(result->creds.session, expected["session"].get<std::string>());
  EXPECT_EQ(result->creds.publish_port, expected["publish_port"].get<int>());
  EXPECT_TRUE(result->creds.pin_master_key);
  EXPECT_EQ(result->creds.master_pub, v["reply_inner_decoded"]["pub_key"].get<std::string>());
  EXPECT_EQ(result->creds.master_pub, PublicPem(master_));
}

TEST_F(ProtocolTest, AcceptsTheWithTokenReply) {
  const Json& v = auth_["with_token"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  std::string pinned = v["reply_inner_decoded"]["pub_key"].get<std::string>();
  std::string token = v["token_plain_ascii"].get<std::string>();
  auto result =
      VerifyAuthReply(reply, Params(minion_, &pinned, token, "fedcba9876543210fedcba9876543210"));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->status, AuthStatus::kAccepted);
  const Json& expected = v["minion_side_result"];
  EXPECT_EQ(result->creds.aes, expected["aes"].get<std::string>());
  EXPECT_EQ(result->creds.session, expected["session"].get<std::string>());
  EXPECT_EQ(result->creds.publish_port, expected["publish_port"].get<int>());
  EXPECT_FALSE(result->creds.pin_master_key);
}

TEST_F(ProtocolTest, APinnedKeyWithOtherLineBreaksIsTheSameKey) {
  const Json& v = auth_["with_token"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  std::string pinned = master_.PublicKey().ToPem();  // trailing newline, as a file may have it
  auto result =
      VerifyAuthReply(reply, Params(minion_, &pinned, v["token_plain_ascii"].get<std::string>(),
                                    "fedcba9876543210fedcba9876543210"));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->status, AuthStatus::kAccepted);
}

TEST_F(ProtocolTest, RejectsAWrongToken) {
  const Json& v = auth_["with_token"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  std::string pinned = PublicPem(master_);
  auto result =
      VerifyAuthReply(reply, Params(minion_, &pinned, wire::Crypticle::GenerateKeyString(),
                                    "fedcba9876543210fedcba9876543210"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(ProtocolTest, RejectsABadSignature) {
  for (const char* name : {"first_contact", "with_token"}) {
    const Json& v = auth_[name];
    Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
    std::string* sig = reply.Find("sig")->str();
    (*sig)[100] = static_cast<char>((*sig)[100] ^ 0x40);
    std::string pinned = PublicPem(master_);
    bool first = std::string(name) == "first_contact";
    auto result =
        VerifyAuthReply(reply, Params(minion_, first ? nullptr : &pinned,
                                      first ? "" : v["token_plain_ascii"].get<std::string>(),
                                      v["reply_inner_decoded"]["nonce"].get<std::string>()));
    ASSERT_FALSE(result.ok()) << name;
    EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated) << name;
  }
}

TEST_F(ProtocolTest, RejectsAWrongNonce) {
  const Json& v = auth_["first_contact"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  auto result =
      VerifyAuthReply(reply, Params(minion_, nullptr, "", "fedcba9876543210fedcba9876543210"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
  EXPECT_NE(result.error().message.find("nonce"), std::string::npos);
}

TEST_F(ProtocolTest, RejectsAChangedMasterKey) {
  const Json& v = auth_["with_token"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  std::string pinned = PublicPem(VectorKey("peer2"));
  auto result =
      VerifyAuthReply(reply, Params(minion_, &pinned, v["token_plain_ascii"].get<std::string>(),
                                    "fedcba9876543210fedcba9876543210"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
  EXPECT_NE(result.error().message.find("master key has changed"), std::string::npos);
}

TEST_F(ProtocolTest, AnotherKeyCannotSignTheReplyOnFirstContact) {
  // An attacker answering a first contact with its own pub_key but the real master's inner
  // signature cannot pass: the outer signature is checked with the received key.
  const Json& v = auth_["first_contact"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex"])).value();
  Value inner = wire::Unpack(*reply.Find("load")->str()).value();
  inner.Set("pub_key", PublicPem(VectorKey("peer2")));
  reply.Set("load", Value::Bin(wire::Pack(inner)));
  auto result =
      VerifyAuthReply(reply, Params(minion_, nullptr, "", "0123456789abcdef0123456789abcdef"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(ProtocolTest, PendingRejectedAndBadAlgorithmReplies) {
  std::string pinned = PublicPem(master_);
  std::string nonce = "0123456789abcdef0123456789abcdef";
  auto pending = VerifyAuthReply(wire::Unpack(Unhex(auth_["pending"]["reply_wire_hex"])).value(),
                                 Params(minion_, &pinned, "x", nonce));
  ASSERT_TRUE(pending.ok()) << pending.error().ToString();
  EXPECT_EQ(pending->status, AuthStatus::kPending);
  // The same reply on first contact cannot be checked (no key yet) but is still "pending".
  auto first = VerifyAuthReply(wire::Unpack(Unhex(auth_["pending"]["reply_wire_hex"])).value(),
                               Params(minion_, nullptr, "", nonce));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->status, AuthStatus::kPending);

  auto rejected = VerifyAuthReply(wire::Unpack(Unhex(auth_["rejected"]["reply_wire_hex"])).value(),
                                  Params(minion_, &pinned, "x", nonce));
  ASSERT_TRUE(rejected.ok()) << rejected.error().ToString();
  EXPECT_EQ(rejected->status, AuthStatus::kRejected);

  auto bad = VerifyAuthReply(wire::Unpack(Unhex(auth_["bad_enc_algo"]["reply_wire_hex"])).value(),
                             Params(minion_, &pinned, "x", nonce));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, AuthStatus::kBadEncAlgo);
}

TEST_F(ProtocolTest, AnUnsignedAcceptIsRefused) {
  Value reply = Value::MapOf({{"enc", "clear"}, {"load", Value::MapOf({{"ret", true}})}});
  auto result = VerifyAuthReply(reply, Params(minion_, nullptr, "", "n"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
}

// ---------------------------------------------------------------- requests

wire::Value PingPublishLoad() {
  return Value::MapOf({{"fun", "test.ping"},
                       {"arg", Value::EmptyArray()},
                       {"tgt", "minion1"},
                       {"jid", "20250101120000123456"},
                       {"ret", ""},
                       {"tgt_type", "glob"},
                       {"user", "root"}});
}

TEST_F(ProtocolTest, V3ReturnEnvelopeIsByteExact) {
  const Json& v = req_["v3_return"];
  auto session =
      wire::Crypticle::FromKeyString(req_["session_key_string"].get<std::string>()).value();
  std::string tok = minion_.X931Sign("salt").value();
  ASSERT_EQ(wire::HexEncode(tok),
            v["plain_load_before_encryption"]["tok"]["hex"].get<std::string>());

  Value load = BuildReturnLoad("minion1", PingPublishLoad(), JobResult{true, 0, true, ""});
  RequestKeys keys;
  keys.version = 3;
  keys.key = &session;
  keys.id = "minion1";
  keys.tok = tok;
  EncodedRequest encoded = EncodeRequestForTest(load, keys, "0123456789abcdef0123456789abcdef",
                                                1700000000, Unhex(v["iv_hex"]));
  EXPECT_EQ(encoded.nonce, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(wire::HexEncode(encoded.body), v["wire_hex"].get<std::string>());

  auto reply = DecodeReply(Unhex(v["reply_wire_hex"]), session, encoded.nonce);
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_TRUE(reply->is_nil());
  // Another nonce: the reply is not ours.
  EXPECT_FALSE(DecodeReply(Unhex(v["reply_wire_hex"]), session, std::string(32, 'a')).ok());
}

TEST_F(ProtocolTest, V2ReturnEnvelopeIsByteExact) {
  const Json& v = req_["v2_return"];
  auto aes = wire::Crypticle::FromKeyString(pub_["aes_key_string"].get<std::string>()).value();
  Value load = BuildReturnLoad("minion1", PingPublishLoad(), JobResult{true, 0, true, ""});
  RequestKeys keys;
  keys.version = 2;
  keys.key = &aes;
  keys.id = "minion1";
  EncodedRequest encoded = EncodeRequestForTest(load, keys, "0123456789abcdef0123456789abcdef",
                                                1700000000, Unhex(v["iv_hex"]));
  EXPECT_EQ(wire::HexEncode(encoded.body), v["wire_hex"].get<std::string>());
  auto reply = DecodeReply(Unhex(v["reply_wire_hex"]), aes, encoded.nonce);
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_TRUE(reply->is_nil());
}

TEST_F(ProtocolTest, UndecryptableRepliesAreAuthenticationErrors) {
  auto session =
      wire::Crypticle::FromKeyString(req_["session_key_string"].get<std::string>()).value();
  for (const Value& body :
       {Value("bad load"), Value::EmptyMap(), Value(""), Value::Bin(wire::RandomBytes(96))}) {
    auto r = DecodeReply(wire::Pack(body), session, "0123456789abcdef0123456789abcdef");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated);
  }
  EXPECT_FALSE(DecodeReply("\xc1", session, "n").ok());
}

TEST_F(ProtocolTest, PillarSendPrivateReplyOpens) {
  const Json& v = req_["pillar_send_private"];
  Value reply = wire::Unpack(Unhex(v["reply_wire_hex_random"])).value();
  std::string nonce = v["request_load_plain"]["nonce"].get<std::string>();
  wire::RsaPublicKey master_pub = master_.PublicKey();
  auto pillar = OpenPillarReply(reply, minion_, wire::OaepHash::kSha1, master_pub,
                                wire::SigHash::kSha1, nonce);
  ASSERT_TRUE(pillar.ok()) << pillar.error().ToString();
  EXPECT_EQ(Wire(*pillar), Wire(ToValue(v["signed_data_decoded"]["pillar"])));

  auto wrong_nonce = OpenPillarReply(reply, minion_, wire::OaepHash::kSha1, master_pub,
                                     wire::SigHash::kSha1, std::string(32, '0'));
  ASSERT_FALSE(wrong_nonce.ok());
  EXPECT_EQ(wrong_nonce.error().code, ErrorCode::kUnauthenticated);

  wire::RsaPublicKey other = VectorKey("peer2").PublicKey();
  auto wrong_master =
      OpenPillarReply(reply, minion_, wire::OaepHash::kSha1, other, wire::SigHash::kSha1, nonce);
  ASSERT_FALSE(wrong_master.ok());
  EXPECT_EQ(wrong_master.error().code, ErrorCode::kUnauthenticated);

  auto no_key = OpenPillarReply(Value::MapOf({{"error", "AES key not found"}}), minion_,
                                wire::OaepHash::kSha1, master_pub, wire::SigHash::kSha1, nonce);
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(ProtocolTest, PillarLoadAndEventLoadsHaveSaltsKeyOrder) {
  Value pillar = BuildPillarLoad("minion1", Value::MapOf({{"os", "Debian"}}));
  std::vector<std::string> keys;
  for (const auto& [k, v] : *pillar.map()) keys.push_back(*k.str());
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "grains", "saltenv", "pillarenv",
                                            "pillar_override", "extra_minion_data", "ver", "cmd"}));
  Value event = BuildEventLoad("minion1", "TOK", "salt/minion/minion1/start", "hello");
  keys.clear();
  for (const auto& [k, v] : *event.map()) keys.push_back(*k.str());
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "cmd", "pretag", "tok", "data", "tag"}));
  EXPECT_TRUE(std::regex_match(
      StartEventText("m1"),
      std::regex(R"(Minion m1 started at \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})")));
}

TEST_F(ProtocolTest, ReturnLoadCarriesOutAndPublishFields) {
  Value pub = PingPublishLoad();
  pub.Set("master_id", "m1");
  pub.Set("metadata", Value::MapOf({{"k", "v"}}));
  Value load = BuildReturnLoad("minion1", pub, NotAvailable("x.y"));
  EXPECT_EQ(*load.FindStr("return"), "'x.y' is not available.");
  EXPECT_EQ(*load.FindStr("out"), "nested");
  EXPECT_EQ(load.Find("retcode")->int64(), 1);
  EXPECT_EQ(load.Find("success")->boolean(), false);
  EXPECT_EQ(*load.FindStr("master_id"), "m1");
  ASSERT_NE(load.Find("metadata"), nullptr);
}

// ---------------------------------------------------------------- publishes

TEST_F(ProtocolTest, PublishFrameDecodesAndAReplayedSerialIsDropped) {
  auto aes = wire::Crypticle::FromKeyString(pub_["aes_key_string"].get<std::string>()).value();
  wire::RsaPublicKey master_pub = master_.PublicKey();
  wire::Crypticle::SerialGuard guard;
  std::string frame = Unhex(pub_["zmq_frame_hex"]);
  auto load = OpenPublish(frame, aes, guard, &master_pub, /*require_signature=*/true);
  ASSERT_TRUE(load.ok()) << load.error().ToString();
  EXPECT_EQ(Wire(*load), Wire(ToValue(pub_["minion_decoded"])));
  EXPECT_TRUE(IsJobLoad(*load));
  EXPECT_EQ(guard.last_serial(), 42u);

  auto replay = OpenPublish(frame, aes, guard, &master_pub, true);
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->is_map() && replay->map()->empty());
}

TEST_F(ProtocolTest, PublishWithAnotherKeyOrSignerIsUnauthenticated) {
  wire::Crypticle::SerialGuard guard;
  std::string frame = Unhex(pub_["zmq_frame_hex"]);
  auto other = wire::Crypticle::FromKeyString(wire::Crypticle::GenerateKeyString()).value();
  auto r = OpenPublish(frame, other, guard, nullptr, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated);

  auto aes = wire::Crypticle::FromKeyString(pub_["aes_key_string"].get<std::string>()).value();
  wire::RsaPublicKey wrong = VectorKey("peer2").PublicKey();
  auto unsigned_ok = OpenPublish(frame, aes, guard, &wrong, /*require_signature=*/false);
  EXPECT_TRUE(unsigned_ok.ok());
  wire::Crypticle::SerialGuard fresh;
  auto bad_sig = OpenPublish(frame, aes, fresh, &wrong, /*require_signature=*/true);
  ASSERT_FALSE(bad_sig.ok());
  EXPECT_EQ(bad_sig.error().code, ErrorCode::kUnauthenticated);
  EXPECT_FALSE(OpenPublish("garbage", aes, fresh, nullptr, false).ok());
}

// ---------------------------------------------------------------- targeting

struct TargetCase {
  const char* tgt_type;  // nullptr: absent (glob)
  Value tgt;
  bool expected;
};

TEST(TargetingTest, MatchTable) {
  Value grains =
      Value::MapOf({{"os", "Debian"},
                    {"os_family", "Debian"},
                    {"num_cpus", 2},
                    {"roles", Value(wire::Array{"web", "db"})},
                    {"ip_interfaces", Value::MapOf({{"eth0", Value(wire::Array{"10.0.0.5"})}})}});
  const TargetCase cases[] = {
      {nullptr, "web*", true},
      {"glob", "web1", true},
      {"glob", "web[0-9]", true},
      {"glob", "db*", false},
      {"glob", "*", true},
      {"pcre", "web\\d+", true},
      {"pcre", "^db", false},
      {"list", "db1,web1,x", true},
      {"list", Value(wire::Array{"a", "web1"}), true},
      {"list", "web10,web", false},
      {"grain", "os:Debian", true},
      {"grain", "os:Deb*", true},
      {"grain", "os:RedHat", false},
      {"grain", "roles:db", true},
      {"grain", "num_cpus:2", true},
      {"grain", "ip_interfaces:eth0:10.0.0.*", true},
      {"grain", "nosuch:x", false},
      {"grain_pcre", "os:Deb.*", true},
      {"compound", "G@os:Debian and web*", true},
      {"compound", "G@os:Debian and not web*", false},
      {"compound", "db* or G@roles:web", true},
      {"compound", "not db* and ( L@x,web1 or E@^zz )", true},
      {"compound", "( db1 or web1 ) and G@os:Debian", true},
      {"compound", "not ( web1 or db1 )", false},
      {"compound", "db* or web* and not G@os:RedHat", true},
      {"compound", "E@web.* and L@web1", true},
      {"compound", "G@os:RedHat or ( E@^web and not L@web2 )", true},
      {"nodegroup_x", "web1", false},  // unknown types match nothing
  };
  for (const TargetCase& c : cases) {
    Value load = Value::MapOf(
        {{"fun", "test.ping"}, {"arg", Value::EmptyArray()}, {"tgt", c.tgt}, {"jid", "1"}});
    if (c.tgt_type != nullptr) load.Set("tgt_type", c.tgt_type);
    auto r = IsTargeted(load, "web1", &grains);
    bool matched = r.ok() && *r;
    EXPECT_EQ(matched, c.expected) << (c.tgt_type ? c.tgt_type : "(none)") << " " << c.tgt.ToJson();
  }
}

TEST(TargetingTest, DelimiterFromThePublish) {
  Value grains = Value::MapOf({{"os", "Debian"}});
  Value load = Value::MapOf({{"tgt", "os|Debian"}, {"tgt_type", "grain"}, {"delimiter", "|"}});
  EXPECT_TRUE(IsTargeted(load, "m", &grains).value());
  EXPECT_TRUE(TargetNeedsGrains(load));
  EXPECT_FALSE(TargetNeedsGrains(Value::MapOf({{"tgt", "x"}})));
}

}  // namespace
}  // namespace halite::minion
