#include "halite/wire/crypticle.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {
namespace {

using Json = nlohmann::ordered_json;  // keeps key order, which byte-exact msgpack needs

Json LoadVectors(const std::string& name) {
  std::ifstream in(std::string(HALITE_TEST_DATA_DIR) + "/vectors/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return Json::parse(buffer.str());
}

std::string Unhex(const Json& j) { return HexDecode(j.get<std::string>()).value(); }

// JSON rendering of a Python object (test-vectors.md 3) back to a Value.
Value ToValue(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return Value();
    case Json::value_t::boolean:
      return Value(j.get<bool>());
    case Json::value_t::number_integer:
      return Value(j.get<std::int64_t>());
    case Json::value_t::number_unsigned:
      return Value(j.get<std::uint64_t>());
    case Json::value_t::number_float:
      return Value(j.get<double>());
    case Json::value_t::string:
      return Value(j.get<std::string>());
    case Json::value_t::array: {
      Array array;
      for (const auto& item : j) array.push_back(ToValue(item));
      return Value(std::move(array));
    }
    case Json::value_t::object: {
      if (j.size() == 1 && j.contains("hex")) return Value(Unhex(j["hex"]));
      Map map;
      for (const auto& [key, item] : j.items()) map.emplace_back(Value(key), ToValue(item));
      return Value(std::move(map));
    }
    default:
      ADD_FAILURE() << "unsupported JSON type";
      return Value();
  }
}

class CrypticleTest : public testing::Test {
 protected:
  void SetUp() override {
    vectors_ = LoadVectors("crypticle.json");
    auto crypticle = Crypticle::FromKeyString(vectors_["key_string"].get<std::string>());
    ASSERT_TRUE(crypticle.ok()) << crypticle.error().ToString();
    crypticle_.emplace(std::move(crypticle).value());
  }

  std::optional<std::string> NonceOf(const Json& test_case) const {
    if (test_case["nonce"].is_null()) return std::nullopt;
    return test_case["nonce"].get<std::string>();
  }

  Json vectors_;
  std::optional<Crypticle> crypticle_;
};

TEST_F(CrypticleTest, KeyStringSplitsIntoAesAndHmacKeys) {
  const std::string key = Base64Decode(crypticle_->key_string()).value();
  ASSERT_EQ(key.size(), 56u);
  EXPECT_EQ(HexEncode(key.substr(0, 24)), vectors_["aes_key_hex"].get<std::string>());
  EXPECT_EQ(HexEncode(key.substr(24)), vectors_["hmac_key_hex"].get<std::string>());
  EXPECT_EQ(crypticle_->key_string(), vectors_["key_string"].get<std::string>());
}

TEST_F(CrypticleTest, EncryptWithFixedIvMatchesEveryVector) {
  ASSERT_EQ(vectors_["cases"].size(), 5u);
  for (const auto& c : vectors_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string out =
        crypticle_->EncryptWithIvForTest(Unhex(c["plaintext_hex"]), Unhex(c["iv_hex"]));
    EXPECT_EQ(HexEncode(out), c["ciphertext_hex"].get<std::string>());
  }
}

TEST_F(CrypticleTest, DumpsWithFixedIvMatchesEveryVector) {
  for (const auto& c : vectors_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const Value object = ToValue(c["object"]);
    EXPECT_EQ(HexEncode(Pack(object, Packing::kWire)), c["msgpack_hex"].get<std::string>());
    const std::optional<std::string> nonce = NonceOf(c);
    const std::string out = crypticle_->DumpsWithIvForTest(
        object, nonce ? std::optional<std::string_view>(*nonce) : std::nullopt, Unhex(c["iv_hex"]));
    EXPECT_EQ(HexEncode(out), c["ciphertext_hex"].get<std::string>());
  }
}

TEST_F(CrypticleTest, DecryptRecoversEveryPlaintext) {
  for (const auto& c : vectors_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    auto plaintext = crypticle_->Decrypt(Unhex(c["ciphertext_hex"]));
    ASSERT_TRUE(plaintext.ok()) << plaintext.error().ToString();
    EXPECT_EQ(HexEncode(*plaintext), c["plaintext_hex"].get<std::string>());
  }
}

TEST_F(CrypticleTest, LoadsDecodesEveryVector) {
  for (const auto& c : vectors_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::optional<std::string> nonce = NonceOf(c);
    auto value = crypticle_->Loads(Unhex(c["ciphertext_hex"]),
                                   nonce ? std::optional<std::string_view>(*nonce) : std::nullopt);
    ASSERT_TRUE(value.ok()) << value.error().ToString();
    EXPECT_EQ(*value, ToValue(c["decoded_back"])) << value->ToJson();
  }
}

TEST_F(CrypticleTest, FullBlockIsPaddedWithSixteenBytes) {
  const Json& c = vectors_["cases"][3];
  ASSERT_EQ(c["name"], "full_pad_block");
  const std::string plaintext = Unhex(c["plaintext_hex"]);
  ASSERT_EQ(plaintext.size(), 16u);
  EXPECT_EQ(Unhex(c["padded_plaintext_hex"]), plaintext + std::string(16, '\x10'));
  EXPECT_EQ(Unhex(c["ciphertext_hex"]).size(), 16 + 32 + 32u);
}

TEST_F(CrypticleTest, BadHmacIsUnauthenticated) {
  const std::string data = Unhex(vectors_["bad_hmac_case"]["ciphertext_hex"]);
  auto plaintext = crypticle_->Decrypt(data);
  ASSERT_FALSE(plaintext.ok());
  EXPECT_EQ(plaintext.error().code, ErrorCode::kUnauthenticated);
  auto value = crypticle_->Loads(data);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(CrypticleTest, AnyFlippedBitIsUnauthenticated) {
  const std::string good = Unhex(vectors_["cases"][0]["ciphertext_hex"]);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    auto plaintext = crypticle_->Decrypt(bad);
    ASSERT_FALSE(plaintext.ok()) << i;
    EXPECT_EQ(plaintext.error().code, ErrorCode::kUnauthenticated) << i;
  }
}

TEST_F(CrypticleTest, MissingPicklePrefixLoadsAsEmptyMap) {
  const std::string data = Unhex(vectors_["no_pickle_prefix_case"]["ciphertext_hex"]);
  auto plaintext = crypticle_->Decrypt(data);
  ASSERT_TRUE(plaintext.ok()) << plaintext.error().ToString();
  EXPECT_FALSE(plaintext->starts_with("pickle::"));
  auto value = crypticle_->Loads(data);
  ASSERT_TRUE(value.ok()) << value.error().ToString();
  EXPECT_EQ(*value, Value::EmptyMap());
  // Also when a nonce is expected: the prefix check comes first.
  auto with_nonce = crypticle_->Loads(data, "0123456789abcdef0123456789abcdef");
  ASSERT_TRUE(with_nonce.ok());
  EXPECT_EQ(*with_nonce, Value::EmptyMap());
}

TEST_F(CrypticleTest, WrongNonceIsUnauthenticated) {
  const Json& c = vectors_["cases"][1];
  ASSERT_EQ(c["name"], "with_nonce");
  const std::string data = Unhex(c["ciphertext_hex"]);
  auto value = crypticle_->Loads(data, "fedcba9876543210fedcba9876543210");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, ErrorCode::kUnauthenticated);
  EXPECT_EQ(value.error().message, "Nonce verification error");
  // A nonce that is a prefix of the real one does not match either.
  auto prefix = crypticle_->Loads(data, "0123456789abcdef");
  ASSERT_FALSE(prefix.ok());
  EXPECT_EQ(prefix.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(CrypticleTest, ExpectedNonceMissingFromPayloadIsAnError) {
  // simple_dict was dumped without a nonce: its msgpack bytes are read as the nonce.
  auto value = crypticle_->Loads(Unhex(vectors_["cases"][0]["ciphertext_hex"]),
                                 "0123456789abcdef0123456789abcdef");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(CrypticleTest, LoadsWithoutNonceOfNonceCarryingPayloadFailsToUnpack) {
  // Without the nonce, the 32 nonce characters become part of the msgpack input: a fixint
  // '0' (0x30) followed by trailing bytes, which Unpack rejects.
  auto value = crypticle_->Loads(Unhex(vectors_["cases"][1]["ciphertext_hex"]));
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(CrypticleTest, EncryptUsesFreshIvAndRoundTrips) {
  const std::string plaintext = "hello world, sixteen+ bytes";
  const std::string a = crypticle_->Encrypt(plaintext);
  const std::string b = crypticle_->Encrypt(plaintext);
  EXPECT_NE(a.substr(0, 16), b.substr(0, 16));
  EXPECT_EQ(a.size(), 16 + 32 + 32u);
  EXPECT_EQ(crypticle_->Decrypt(a).value(), plaintext);
  EXPECT_EQ(crypticle_->Decrypt(b).value(), plaintext);
  for (std::size_t n = 0; n <= 48; ++n) {
    const std::string p(n, 'x');
    const std::string c = crypticle_->Encrypt(p);
    EXPECT_EQ(c.size(), 16 + (n / 16 + 1) * 16 + 32);
    EXPECT_EQ(crypticle_->Decrypt(c).value(), p);
  }
}

TEST_F(CrypticleTest, DumpsLoadsRoundTripWithAndWithoutNonce) {
  const Value obj = Value::MapOf({{"fun", "test.ping"}, {"arg", Value::EmptyArray()}, {"n", 7}});
  EXPECT_EQ(crypticle_->Loads(crypticle_->Dumps(obj)).value(), obj);
  const std::string nonce = RandomNonce();
  EXPECT_EQ(crypticle_->Loads(crypticle_->Dumps(obj, nonce), nonce).value(), obj);
  // An empty nonce means "no nonce", as in Salt's `if nonce:`.
  EXPECT_EQ(crypticle_->Loads(crypticle_->Dumps(obj, ""), "").value(), obj);
  EXPECT_EQ(crypticle_->Loads(crypticle_->Dumps(obj), "").value(), obj);
}

TEST_F(CrypticleTest, TruncatedOrMisalignedCiphertextIsInvalidArgument) {
  const std::string good = Unhex(vectors_["cases"][0]["ciphertext_hex"]);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{16}, std::size_t{47},
                        std::size_t{48}, std::size_t{63}, good.size() - 1, good.size() - 16}) {
    auto plaintext = crypticle_->Decrypt(good.substr(0, n));
    ASSERT_FALSE(plaintext.ok()) << n;
    if (n % 16 == 0 && n >= 64) {
      EXPECT_EQ(plaintext.error().code, ErrorCode::kUnauthenticated) << n;
    } else {
      EXPECT_EQ(plaintext.error().code, ErrorCode::kInvalidArgument) << n;
    }
    EXPECT_FALSE(crypticle_->Loads(good.substr(0, n)).ok());
  }
  auto extended = crypticle_->Decrypt(good + "x");
  ASSERT_FALSE(extended.ok());
  EXPECT_EQ(extended.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(CrypticleTest, BadPadLengthIsInvalidArgumentEvenWithValidHmac) {
  // Authenticated messages whose last plaintext byte is 0 or > 16, so only the pad check can
  // reject them. EncryptWithIvForTest(block) = IV || C1 || C2(pad block) || T, and IV || C1 on
  // its own is a valid CBC encryption of `block`; re-MAC it with the vector's HMAC key.
  const std::string hmac_key = Unhex(vectors_["hmac_key_hex"]);
  const std::string iv(16, '\x42');
  for (char last : {'\x00', '\x11', '\xff'}) {
    std::string block(16, 'a');
    block.back() = last;
    const std::string full = crypticle_->EncryptWithIvForTest(block, iv);
    std::string forged = full.substr(0, 32);
    unsigned char mac[32];
    unsigned int mac_len = 0;
    ASSERT_NE(
        HMAC(EVP_sha256(), hmac_key.data(), static_cast<int>(hmac_key.size()),
             reinterpret_cast<const unsigned char*>(forged.data()), forged.size(), mac, &mac_len),
        nullptr);
    forged.append(reinterpret_cast<const char*>(mac), mac_len);
    auto plaintext = crypticle_->Decrypt(forged);
    ASSERT_FALSE(plaintext.ok()) << static_cast<int>(last);
    EXPECT_EQ(plaintext.error().code, ErrorCode::kInvalidArgument);
  }
  // Pad values 1..16 are stripped by length only, without checking the pad bytes (Salt).
  std::string block(16, 'a');
  block.back() = '\x03';
  const std::string full = crypticle_->EncryptWithIvForTest(block, iv);
  std::string forged = full.substr(0, 32);
  unsigned char mac[32];
  unsigned int mac_len = 0;
  ASSERT_NE(
      HMAC(EVP_sha256(), hmac_key.data(), static_cast<int>(hmac_key.size()),
           reinterpret_cast<const unsigned char*>(forged.data()), forged.size(), mac, &mac_len),
      nullptr);
  forged.append(reinterpret_cast<const char*>(mac), mac_len);
  EXPECT_EQ(crypticle_->Decrypt(forged).value(), std::string(13, 'a'));
}

TEST(CrypticleKeyTest, GeneratedKeyStringsAreValidAndDistinct) {
  const std::string a = Crypticle::GenerateKeyString();
  const std::string b = Crypticle::GenerateKeyString();
  EXPECT_EQ(a.size(), 76u);
  EXPECT_EQ(a.back(), '=');
  EXPECT_NE(a, b);
  auto crypticle = Crypticle::FromKeyString(a);
  ASSERT_TRUE(crypticle.ok());
  EXPECT_EQ(crypticle->key_string(), a);
}

TEST(CrypticleKeyTest, BadKeyStringsAreInvalidArgument) {
  const std::string good = Crypticle::GenerateKeyString();
  const std::string wrong_length = Base64Encode(std::string(55, 'k'));
  const std::string too_long = Base64Encode(std::string(57, 'k'));
  for (const std::string& bad :
       {std::string(), wrong_length, too_long, good.substr(0, 72), good + "\n",
        good.substr(0, 75) + "!", std::string(76, '*'), std::string("not base64 at all")}) {
    auto crypticle = Crypticle::FromKeyString(bad);
    ASSERT_FALSE(crypticle.ok()) << bad;
    EXPECT_EQ(crypticle.error().code, ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(CrypticleKeyTest, DifferentKeyCannotDecrypt) {
  auto a = Crypticle::FromKeyString(Crypticle::GenerateKeyString()).value();
  auto b = Crypticle::FromKeyString(Crypticle::GenerateKeyString()).value();
  auto result = b.Loads(a.Dumps(Value("secret")));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
}

TEST(CrypticleSerialGuardTest, FreshSerialPassesAndIsStripped) {
  Crypticle::SerialGuard guard;
  const Value out = guard.Apply(Value::MapOf({{"fun", "test.ping"}, {"serial", 1}}));
  EXPECT_EQ(out, Value::MapOf({{"fun", "test.ping"}}));
  EXPECT_EQ(guard.last_serial(), 1u);
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 5}, {"x", 1}})), Value::MapOf({{"x", 1}}));
  EXPECT_EQ(guard.last_serial(), 5u);
}

TEST(CrypticleSerialGuardTest, ReplayedOrLowerSerialBecomesEmptyMap) {
  Crypticle::SerialGuard guard;
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 42}, {"x", 1}})), Value::MapOf({{"x", 1}}));
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 42}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 41}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.last_serial(), 42u);
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 43}})), Value::EmptyMap());  // fresh, now empty
  EXPECT_EQ(guard.last_serial(), 43u);
}

TEST(CrypticleSerialGuardTest, ZeroNegativeAndNonIntegerSerialsAreRejected) {
  Crypticle::SerialGuard guard;
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 0}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", -3}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", "7"}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", nullptr}, {"x", 1}})), Value::EmptyMap());
  EXPECT_EQ(guard.last_serial(), 0u);
}

TEST(CrypticleSerialGuardTest, ValuesWithoutSerialPassThrough) {
  Crypticle::SerialGuard guard;
  EXPECT_EQ(guard.Apply(Value::MapOf({{"x", 1}})), Value::MapOf({{"x", 1}}));
  EXPECT_EQ(guard.Apply(Value("serial")), Value("serial"));
  EXPECT_EQ(guard.Apply(Value()), Value());
  EXPECT_EQ(guard.Apply(Value(Array{Value("serial"), Value(1)})),
            Value(Array{Value("serial"), Value(1)}));
}

TEST(CrypticleSerialGuardTest, ResetForgetsTheLastSerial) {
  Crypticle::SerialGuard guard;
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 9}, {"x", 1}})), Value::MapOf({{"x", 1}}));
  guard.Reset();
  EXPECT_EQ(guard.Apply(Value::MapOf({{"serial", 1}, {"x", 1}})), Value::MapOf({{"x", 1}}));
}

TEST(CrypticlePublishTest, PublishVectorDecodesAndPassesTheGuardOnce) {
  const Json v = LoadVectors("publish.json");
  auto crypticle = Crypticle::FromKeyString(v["aes_key_string"].get<std::string>()).value();
  // Plaintext as sent: the publish load plus serial 42, pickled.
  const std::string plain = Unhex(v["encrypted_load_plain_hex"]);
  Value load = ToValue(v["publish_load"]);
  load.Set("serial", v["serial_used"].get<int>());
  EXPECT_EQ(plain, std::string("pickle::") + Pack(load, Packing::kWire));
  const std::string ct = crypticle.EncryptWithIvForTest(plain, Unhex(v["iv_hex"]));
  const std::string frame = Unhex(v["zmq_frame_hex"]);
  EXPECT_NE(frame.find(ct), std::string::npos) << "ciphertext not found in the ZMQ frame";

  Crypticle::SerialGuard guard;
  const Value decoded = guard.Apply(crypticle.Loads(ct).value());
  EXPECT_EQ(decoded, ToValue(v["minion_decoded"]));
  EXPECT_EQ(guard.Apply(crypticle.Loads(ct).value()), Value::EmptyMap());  // replay
}

TEST(CrypticleReqChannelTest, SessionReplyVectorsDecryptWithNonce) {
  const Json v = LoadVectors("reqchannel.json");
  auto session = Crypticle::FromKeyString(v["session_key_string"].get<std::string>()).value();
  const Json& v3 = v["v3_return"];
  // The reply frame is one msgpack str holding the ciphertext.
  const Value frame = Unpack(Unhex(v3["reply_wire_hex"])).value();
  ASSERT_TRUE(frame.is_str());
  const std::string nonce = v3["plain_load_before_encryption"]["nonce"].get<std::string>();
  auto reply = session.Loads(*frame.str(), nonce);
  ASSERT_TRUE(reply.ok()) << reply.error().ToString();
  EXPECT_TRUE(reply->is_nil());
  EXPECT_EQ(HexEncode(session.DumpsWithIvForTest(Value(), nonce, Unhex(v3["reply_iv_hex"]))),
            HexEncode(*frame.str()));
}

TEST(CrypticleReqChannelTest, V3ReturnLoadDecryptsWithTheSessionKey) {
  const Json v = LoadVectors("reqchannel.json");
  auto session = Crypticle::FromKeyString(v["session_key_string"].get<std::string>()).value();
  const Json& v3 = v["v3_return"];
  const std::string load = Unhex(v3["envelope"]["load"]["hex"]);
  auto decoded = session.Loads(load);
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(*decoded, ToValue(v3["server_decoded_load"])) << decoded->ToJson();
  // Byte-exact re-encryption with IV1.
  EXPECT_EQ(HexEncode(session.DumpsWithIvForTest(ToValue(v3["plain_load_before_encryption"]),
                                                 std::nullopt, Unhex(v3["iv_hex"]))),
            HexEncode(load));
}

}  // namespace
}  // namespace halite::wire
