#include "halite/wire/rsa.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "halite/wire/crypticle.h"
#include "halite/wire/encoding.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {
namespace {

using Json = nlohmann::ordered_json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Json LoadVectors(const std::string& name) {
  return Json::parse(ReadFile(std::string(HALITE_TEST_DATA_DIR) + "/vectors/" + name));
}

std::string Unhex(const Json& j) { return HexDecode(j.get<std::string>()).value(); }

// Flips one bit in the middle of `s`.
std::string Flipped(std::string s, std::size_t index) {
  s[index] = static_cast<char>(s[index] ^ 0x01);
  return s;
}

// OpenSSL-side re-encodings of a key, to feed the other PEM flavours into FromPem.
struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
std::unique_ptr<EVP_PKEY, PkeyDeleter> ParseWithOpenSsl(const std::string& private_pem) {
  BIO* bio = BIO_new_mem_buf(private_pem.data(), static_cast<int>(private_pem.size()));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return std::unique_ptr<EVP_PKEY, PkeyDeleter>(pkey);
}
std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return text;
}
std::string EncodeWithOpenSsl(EVP_PKEY* pkey, int selection, const char* structure) {
  OSSL_ENCODER_CTX* ctx = OSSL_ENCODER_CTX_new_for_pkey(pkey, selection, "PEM", structure, nullptr);
  unsigned char* data = nullptr;
  std::size_t n = 0;
  EXPECT_EQ(OSSL_ENCODER_to_data(ctx, &data, &n), 1);
  OSSL_ENCODER_CTX_free(ctx);
  std::string text(reinterpret_cast<char*>(data), n);
  OPENSSL_free(data);
  return text;
}

class RsaVectorTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    vectors_ = new Json(LoadVectors("rsa.json"));
    for (const char* name : {"master", "minion", "peer2", "cluster"}) {
      const Json& keys = (*vectors_)["keys"];
      (*private_)[name] = std::make_shared<RsaPrivateKey>(
          RsaPrivateKey::FromPem(keys[std::string(name) + "_private_pem_pkcs1"].get<std::string>())
              .value());
      (*public_)[name] = std::make_shared<RsaPublicKey>(
          RsaPublicKey::FromPem(keys[std::string(name) + "_public_pem_spki"].get<std::string>())
              .value());
    }
  }
  static void TearDownTestSuite() {
    delete vectors_;
    vectors_ = nullptr;
    private_->clear();
    public_->clear();
  }

  static const Json& V() { return *vectors_; }
  static const RsaPrivateKey& Priv(const std::string& name) { return *private_->at(name); }
  static const RsaPublicKey& Pub(const std::string& name) { return *public_->at(name); }

  static inline Json* vectors_ = nullptr;
  static inline auto* private_ = new std::map<std::string, std::shared_ptr<RsaPrivateKey>>();
  static inline auto* public_ = new std::map<std::string, std::shared_ptr<RsaPublicKey>>();
};

TEST(RsaAlgoTest, ParsesAndNamesEncAlgos) {
  EXPECT_EQ(ParseEncAlgo("OAEP-SHA1").value(), OaepHash::kSha1);
  EXPECT_EQ(ParseEncAlgo("OAEP-SHA224").value(), OaepHash::kSha224);
  EXPECT_EQ(EncAlgoName(OaepHash::kSha1), "OAEP-SHA1");
  EXPECT_EQ(EncAlgoName(OaepHash::kSha224), "OAEP-SHA224");
  for (const char* bad : {"", "oaep-sha1", "OAEP-SHA256", "PKCS1v15-SHA1", "OAEP-SHA1 "}) {
    auto parsed = ParseEncAlgo(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(RsaAlgoTest, ParsesAndNamesSigAlgos) {
  EXPECT_EQ(ParseSigAlgo("PKCS1v15-SHA1").value(), SigHash::kSha1);
  EXPECT_EQ(ParseSigAlgo("PKCS1v15-SHA224").value(), SigHash::kSha224);
  EXPECT_EQ(SigAlgoName(SigHash::kSha1), "PKCS1v15-SHA1");
  EXPECT_EQ(SigAlgoName(SigHash::kSha224), "PKCS1v15-SHA224");
  for (const char* bad : {"", "PKCS1v15-SHA256", "OAEP-SHA1", "pkcs1v15-sha1"}) {
    auto parsed = ParseSigAlgo(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(RsaCleanKeyTest, StripsAndNormalisesLineBreaks) {
  EXPECT_EQ(CleanKey("  \n-----BEGIN X-----\r\nAAAA\rBBBB\n-----END X-----\n\n  "),
            "-----BEGIN X-----\nAAAA\nBBBB\n-----END X-----");
  EXPECT_EQ(CleanKey("a\n\nb"), "a\n\nb");  // inner empty lines stay, as in splitlines()
  EXPECT_EQ(CleanKey("a\r\n\r\nb"), "a\n\nb");
  EXPECT_EQ(CleanKey("a\n"), "a");
  EXPECT_EQ(CleanKey(""), "");
  EXPECT_EQ(CleanKey(" \t\r\n"), "");
  EXPECT_EQ(CleanKey("a  \nb"), "a  \nb");  // only the ends are stripped
  EXPECT_EQ(CleanKey("a\x0b"
                     "b\x0c"
                     "c"),
            "a\nb\nc");
  EXPECT_EQ(CleanKey(CleanKey(" x\ny \n")), CleanKey(" x\ny \n"));
}

TEST_F(RsaVectorTest, KeyFilesMatchTheJsonKeys) {
  for (const char* name : {"master", "minion", "peer2", "cluster"}) {
    const std::string file =
        ReadFile(std::string(HALITE_TEST_DATA_DIR) + "/vectors/key_" + name + ".pem");
    EXPECT_EQ(CleanKey(file),
              CleanKey(V()["keys"][std::string(name) + "_private_pem_pkcs1"].get<std::string>()))
        << name;
    auto key = RsaPrivateKey::FromPem(file);
    ASSERT_TRUE(key.ok()) << key.error().ToString();
    EXPECT_EQ(key->size_bytes(), 256u);
  }
}

TEST_F(RsaVectorTest, PemRoundTripsAreExact) {
  for (const char* name : {"master", "minion", "peer2", "cluster"}) {
    SCOPED_TRACE(name);
    const std::string priv_pem =
        V()["keys"][std::string(name) + "_private_pem_pkcs1"].get<std::string>();
    const std::string pub_pem =
        V()["keys"][std::string(name) + "_public_pem_spki"].get<std::string>();
    EXPECT_EQ(Priv(name).ToPem(), priv_pem);
    EXPECT_EQ(Pub(name).ToPem(), pub_pem);
    EXPECT_EQ(CleanKey(Priv(name).ToPem()), CleanKey(priv_pem));
    EXPECT_EQ(Pub(name).ToPem().back(), '\n');
    EXPECT_TRUE(Priv(name).ToPem().starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    // Public from private equals the vector public key.
    EXPECT_EQ(Priv(name).PublicKey().ToPem(), pub_pem);
    // CleanKey'd text (as sent in _auth) parses too.
    auto reparsed = RsaPublicKey::FromPem(CleanKey(pub_pem));
    ASSERT_TRUE(reparsed.ok());
    EXPECT_EQ(reparsed->ToPem(), pub_pem);
  }
}

TEST_F(RsaVectorTest, AcceptsPkcs1PublicAndPkcs8PrivatePem) {
  const std::string priv_pem = V()["keys"]["minion_private_pem_pkcs1"].get<std::string>();
  const std::string pub_pem = V()["keys"]["minion_public_pem_spki"].get<std::string>();
  auto pkey = ParseWithOpenSsl(priv_pem);
  ASSERT_NE(pkey, nullptr);

  const std::string pkcs1_pub = EncodeWithOpenSsl(pkey.get(), EVP_PKEY_PUBLIC_KEY, "type-specific");
  ASSERT_TRUE(pkcs1_pub.starts_with("-----BEGIN RSA PUBLIC KEY-----")) << pkcs1_pub;
  auto from_pkcs1 = RsaPublicKey::FromPem(pkcs1_pub);
  ASSERT_TRUE(from_pkcs1.ok()) << from_pkcs1.error().ToString();
  EXPECT_EQ(from_pkcs1->ToPem(), pub_pem);  // re-emitted as SPKI

  const std::string pkcs8 = EncodeWithOpenSsl(pkey.get(), EVP_PKEY_KEYPAIR, "PrivateKeyInfo");
  ASSERT_TRUE(pkcs8.starts_with("-----BEGIN PRIVATE KEY-----")) << pkcs8;
  auto from_pkcs8 = RsaPrivateKey::FromPem(pkcs8);
  ASSERT_TRUE(from_pkcs8.ok()) << from_pkcs8.error().ToString();
  EXPECT_EQ(from_pkcs8->ToPem(), priv_pem);  // re-emitted as PKCS#1
}

TEST_F(RsaVectorTest, EncryptedPrivateKeysAreRejectedWithoutPrompting) {
  auto pkey = ParseWithOpenSsl(V()["keys"]["minion_private_pem_pkcs1"].get<std::string>());
  ASSERT_NE(pkey, nullptr);
  char pass[] = "secret";
  BIO* traditional = BIO_new(BIO_s_mem());
  ASSERT_EQ(PEM_write_bio_PrivateKey_traditional(traditional, pkey.get(), EVP_aes_128_cbc(),
                                                 reinterpret_cast<unsigned char*>(pass), 6, nullptr,
                                                 nullptr),
            1);
  BIO* pkcs8 = BIO_new(BIO_s_mem());
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(pkcs8, pkey.get(), EVP_aes_128_cbc(), pass, 6, nullptr,
                                          nullptr),
            1);
  for (const std::string& pem : {BioText(traditional), BioText(pkcs8)}) {
    ASSERT_NE(pem.find("ENCRYPTED"), std::string::npos) << pem;
    auto key = RsaPrivateKey::FromPem(pem);
    ASSERT_FALSE(key.ok());
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST_F(RsaVectorTest, CorruptPemIsInvalidArgument) {
  const std::string pub_pem = V()["keys"]["master_public_pem_spki"].get<std::string>();
  const std::string priv_pem = V()["keys"]["master_private_pem_pkcs1"].get<std::string>();
  const std::string ec_public =
      "-----BEGIN PUBLIC KEY-----\n"
      "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEb09olPeceThmRWlGXUsVLe4o6/2E\n"
      "P6blmzxmOPQ8CP7T/BR5dDDlfgkeb3lxBxYtAG5yfLdnpkpJQTbKFRdzyw==\n"
      "-----END PUBLIC KEY-----\n";
  const std::string ed25519_private =
      "-----BEGIN PRIVATE KEY-----\n"
      "MC4CAQAwBQYDK2VwBCIEICtGMwctQnBo+nC94xjySmR/O5AP5wgagLxpgBqJQd9i\n"
      "-----END PRIVATE KEY-----\n";
  std::string flipped_body = pub_pem;
  flipped_body[40] = flipped_body[40] == 'A' ? 'B' : 'A';
  std::string bad_base64 = pub_pem;
  bad_base64[40] = '*';
  const std::vector<std::string> bad_public = {
      "",
      "garbage",
      std::string(1000, '\0'),
      "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
      "-----BEGIN PUBLIC "
      "KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA5YQD0kBCSTiWCx42YXOH\n",
      pub_pem.substr(0, pub_pem.size() / 2),
      pub_pem.substr(0, pub_pem.size() - 30),
      flipped_body,
      bad_base64,
      priv_pem,  // a private key is not accepted where a public key is expected
      ec_public,
  };
  for (const std::string& pem : bad_public) {
    auto key = RsaPublicKey::FromPem(pem);
    ASSERT_FALSE(key.ok()) << pem;
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument) << pem;
  }
  const std::vector<std::string> bad_private = {
      "",
      "garbage",
      "-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n",
      priv_pem.substr(0, priv_pem.size() / 2),
      priv_pem.substr(0, 200) + priv_pem.substr(264),
      pub_pem,  // a public key has no private half
      ed25519_private,
  };
  for (const std::string& pem : bad_private) {
    auto key = RsaPrivateKey::FromPem(pem);
    ASSERT_FALSE(key.ok()) << pem;
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument) << pem;
  }
}

TEST_F(RsaVectorTest, MutatedPemNeverCrashes) {
  const std::string pub_pem = V()["keys"]["peer2_public_pem_spki"].get<std::string>();
  const std::string priv_pem = V()["keys"]["peer2_private_pem_pkcs1"].get<std::string>();
  for (std::size_t i = 0; i < pub_pem.size(); ++i) {
    (void)RsaPublicKey::FromPem(pub_pem.substr(0, i));
    auto key = RsaPublicKey::FromPem(Flipped(pub_pem, i));
    if (key.ok()) {  // a flip that still decodes to some valid key
      EXPECT_EQ(key->size_bytes(), 256u);
    }
  }
  for (std::size_t i = 0; i < priv_pem.size(); i += 9) {
    (void)RsaPrivateKey::FromPem(priv_pem.substr(0, i));
    (void)RsaPrivateKey::FromPem(Flipped(priv_pem, i));
  }
}

TEST(RsaComponentTest, RejectsEvenOrTinyExponents) {
  // A real modulus with a bad public exponent, assembled with OpenSSL's fromdata.
  auto valid = RsaPrivateKey::Generate(1024).value();
  auto pkey = ParseWithOpenSsl(valid.ToPem());
  ASSERT_NE(pkey, nullptr);
  BIGNUM* n = nullptr;
  ASSERT_EQ(EVP_PKEY_get_bn_param(pkey.get(), "n", &n), 1);
  for (unsigned long bad_e : {1ul, 2ul, 65536ul}) {
    BIGNUM* e = BN_new();
    BN_set_word(e, bad_e);
    OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM_BLD_push_BN(bld, "n", n);
    OSSL_PARAM_BLD_push_BN(bld, "e", e);
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
    EVP_PKEY* weird = nullptr;
    ASSERT_EQ(EVP_PKEY_fromdata_init(ctx), 1);
    ASSERT_EQ(EVP_PKEY_fromdata(ctx, &weird, EVP_PKEY_PUBLIC_KEY, params), 1);
    BIO* bio = BIO_new(BIO_s_mem());
    ASSERT_EQ(PEM_write_bio_PUBKEY(bio, weird), 1);
    const std::string pem = BioText(bio);
    auto key = RsaPublicKey::FromPem(pem);
    ASSERT_FALSE(key.ok()) << bad_e;
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument);
    EVP_PKEY_free(weird);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(e);
  }
  BN_free(n);
}

TEST_F(RsaVectorTest, X931SignaturesMatchAndRecover) {
  ASSERT_EQ(V()["x931"].size(), 2u);
  for (const auto& c : V()["x931"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::string signer = c["signer"].get<std::string>();
    const std::string message = c["message_ascii"].get<std::string>();
    auto sig = Priv(signer).X931Sign(message);
    ASSERT_TRUE(sig.ok()) << sig.error().ToString();
    EXPECT_EQ(HexEncode(*sig), c["signature_hex"].get<std::string>());
    auto recovered = Pub(signer).X931Recover(Unhex(c["signature_hex"]));
    ASSERT_TRUE(recovered.ok()) << recovered.error().ToString();
    EXPECT_EQ(*recovered, c["recovered_by_public_key"].get<std::string>());
    // From the private key's own public half too.
    EXPECT_EQ(Priv(signer).PublicKey().X931Recover(*sig).value(), message);
  }
  // The auth sig is over the hex SHA-256 of the AES key string.
  EXPECT_EQ(V()["x931"][0]["message_ascii"].get<std::string>(),
            Sha256Hex(V()["oaep"][0]["plaintext_ascii"].get<std::string>()));
}

TEST_F(RsaVectorTest, X931RecoverRejectsBadSignatures) {
  const std::string sig = Unhex(V()["x931"][1]["signature_hex"]);  // minion tok over "salt"
  // Wrong key: the padding does not check out.
  auto wrong_key = Pub("master").X931Recover(sig);
  ASSERT_FALSE(wrong_key.ok());
  EXPECT_EQ(wrong_key.error().code, ErrorCode::kUnauthenticated);
  for (std::size_t i : {std::size_t{0}, std::size_t{100}, sig.size() - 1}) {
    auto flipped = Pub("minion").X931Recover(Flipped(sig, i));
    EXPECT_FALSE(flipped.ok() && *flipped == "salt") << i;
  }
  for (const std::string& bad :
       {std::string(), sig.substr(1), sig + std::string(1, '\0'), std::string(512, '\x01')}) {
    auto recovered = Pub("minion").X931Recover(bad);
    ASSERT_FALSE(recovered.ok()) << bad.size();
    EXPECT_EQ(recovered.error().code, ErrorCode::kInvalidArgument) << bad.size();
  }
  // All-0xff is larger than the modulus.
  auto too_big = Pub("minion").X931Recover(std::string(256, '\xff'));
  EXPECT_FALSE(too_big.ok());
  auto zero = Pub("minion").X931Recover(std::string(256, '\0'));
  EXPECT_FALSE(zero.ok());
}

TEST_F(RsaVectorTest, X931HandlesMessageLengthLimits) {
  const RsaPrivateKey& key = Priv("peer2");
  const std::size_t k = key.size_bytes();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{64}, k - 4, k - 2}) {
    const std::string message(n, 'm');
    auto sig = key.X931Sign(message);
    ASSERT_TRUE(sig.ok()) << n << " " << sig.error().ToString();
    EXPECT_EQ(sig->size(), k);
    EXPECT_EQ(Pub("peer2").X931Recover(*sig).value(), message) << n;
  }
  // k - 2 bytes use the 0x6A header; k - 3 would need the unverifiable 0x6B 0xBA.
  for (std::size_t n : {k - 3, k - 1, k, k + 1}) {
    auto rejected = key.X931Sign(std::string(n, 'm'));
    ASSERT_FALSE(rejected.ok()) << n;
    EXPECT_EQ(rejected.error().code, ErrorCode::kInvalidArgument) << n;
  }
}

// Our X9.31 layout against OpenSSL's own RSA_X931_PADDING path (the one Salt calls). OpenSSL 3
// reports failure from EVP_PKEY_CTX_set_rsa_padding(RSA_X931_PADDING) without a digest but
// keeps the mode, so the return value is deliberately ignored here.
std::string OpenSslX931(EVP_PKEY* pkey, bool sign, std::string_view input) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr);
  EXPECT_EQ(sign ? EVP_PKEY_sign_init(ctx) : EVP_PKEY_verify_recover_init(ctx), 1);
  (void)EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_X931_PADDING);
  ERR_clear_error();
  std::string out(static_cast<std::size_t>(EVP_PKEY_get_size(pkey)), '\0');
  std::size_t n = out.size();
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  auto* dst = reinterpret_cast<unsigned char*>(out.data());
  const int rc = sign ? EVP_PKEY_sign(ctx, dst, &n, in, input.size())
                      : EVP_PKEY_verify_recover(ctx, dst, &n, in, input.size());
  EVP_PKEY_CTX_free(ctx);
  ERR_clear_error();
  if (rc != 1) return "<failed>";
  out.resize(n);
  return out;
}

TEST_F(RsaVectorTest, X931AgreesWithOpenSslX931Padding) {
  auto pkey = ParseWithOpenSsl(V()["keys"]["cluster_private_pem_pkcs1"].get<std::string>());
  ASSERT_NE(pkey, nullptr);
  const RsaPrivateKey& key = Priv("cluster");
  const std::size_t k = key.size_bytes();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{64},
                        std::size_t{100}, k - 4, k - 2}) {
    const std::string message = RandomBytes(n);
    const std::string ours = key.X931Sign(message).value();
    EXPECT_EQ(HexEncode(ours), HexEncode(OpenSslX931(pkey.get(), /*sign=*/true, message))) << n;
    // OpenSSL's provider reports an empty recovered message as a failure.
    if (n > 0) {
      EXPECT_EQ(OpenSslX931(pkey.get(), /*sign=*/false, ours), message) << n;
    }
    EXPECT_EQ(Pub("cluster").X931Recover(ours).value(), message) << n;
  }
  // k - 3: OpenSSL signs it but cannot verify its own output; we refuse to sign.
  const std::string odd(k - 3, 'm');
  EXPECT_EQ(OpenSslX931(pkey.get(), /*sign=*/false, OpenSslX931(pkey.get(), true, odd)),
            "<failed>");
  auto recovered = Pub("cluster").X931Recover(OpenSslX931(pkey.get(), true, odd));
  ASSERT_FALSE(recovered.ok());
  EXPECT_EQ(recovered.error().code, ErrorCode::kUnauthenticated);
}

TEST_F(RsaVectorTest, Pkcs1v15SignaturesMatchAndVerify) {
  ASSERT_EQ(V()["pkcs1v15"].size(), 2u);
  for (const auto& c : V()["pkcs1v15"]) {
    SCOPED_TRACE(c["algorithm"].get<std::string>());
    const SigHash hash = ParseSigAlgo(c["algorithm"].get<std::string>()).value();
    const std::string signer = c["signer"].get<std::string>();
    const std::string data = Unhex(c["data_hex"]);
    const std::string expected = Unhex(c["signature_hex"]);
    auto sig = Priv(signer).Sign(data, hash);
    ASSERT_TRUE(sig.ok()) << sig.error().ToString();
    EXPECT_EQ(HexEncode(*sig), HexEncode(expected));
    EXPECT_TRUE(Pub(signer).Verify(data, expected, hash).ok());

    const SigHash other = hash == SigHash::kSha1 ? SigHash::kSha224 : SigHash::kSha1;
    const std::vector<Status> failures = {
        Pub(signer).Verify(data, Flipped(expected, 0), hash),
        Pub(signer).Verify(data, Flipped(expected, 128), hash),
        Pub(signer).Verify(data, Flipped(expected, expected.size() - 1), hash),
        Pub(signer).Verify(Flipped(data, 3), expected, hash),
        Pub(signer).Verify(data, expected, other),
        Pub("minion").Verify(data, expected, hash),
        Pub(signer).Verify(data, expected.substr(1), hash),
        Pub(signer).Verify(data, expected + "x", hash),
        Pub(signer).Verify(data, "", hash),
        Pub(signer).Verify(data, std::string(256, '\xff'), hash),
    };
    for (std::size_t i = 0; i < failures.size(); ++i) {
      ASSERT_FALSE(failures[i].ok()) << i;
      EXPECT_EQ(failures[i].error().code, ErrorCode::kUnauthenticated) << i;
    }
  }
}

TEST_F(RsaVectorTest, OaepVectorsDecrypt) {
  ASSERT_EQ(V()["oaep"].size(), 2u);
  for (const auto& c : V()["oaep"]) {
    SCOPED_TRACE(c["algorithm"].get<std::string>());
    const OaepHash hash = ParseEncAlgo(c["algorithm"].get<std::string>()).value();
    const std::string ct = Unhex(c["ciphertext_hex_random"]);
    const RsaPrivateKey& key = Priv(c["recipient"].get<std::string>());
    auto plaintext = key.Decrypt(ct, hash);
    ASSERT_TRUE(plaintext.ok()) << plaintext.error().ToString();
    EXPECT_EQ(*plaintext, c["python_decrypts_to"].get<std::string>());
    EXPECT_EQ(*plaintext, c["plaintext_ascii"].get<std::string>());

    const OaepHash other = hash == OaepHash::kSha1 ? OaepHash::kSha224 : OaepHash::kSha1;
    for (const auto& result : {key.Decrypt(ct, other), key.Decrypt(Flipped(ct, 10), hash),
                               Priv("master").Decrypt(ct, hash)}) {
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.error().code, ErrorCode::kUnauthenticated);
    }
    for (const std::string& bad : {std::string(), ct.substr(1), ct + "x"}) {
      auto result = key.Decrypt(bad, hash);
      ASSERT_FALSE(result.ok());
      EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

TEST_F(RsaVectorTest, OaepRoundTripsWithBothHashes) {
  const std::string key_string = Crypticle::GenerateKeyString();
  for (OaepHash hash : {OaepHash::kSha1, OaepHash::kSha224}) {
    SCOPED_TRACE(EncAlgoName(hash));
    auto a = Pub("minion").Encrypt(key_string, hash);
    auto b = Pub("minion").Encrypt(key_string, hash);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->size(), 256u);
    EXPECT_NE(*a, *b);  // randomized
    EXPECT_EQ(Priv("minion").Decrypt(*a, hash).value(), key_string);
    EXPECT_EQ(Priv("minion").Decrypt(*b, hash).value(), key_string);
    EXPECT_EQ(Priv("minion").Decrypt(Pub("minion").Encrypt("", hash).value(), hash).value(), "");
    // The longest plaintext OAEP allows: k - 2 * hLen - 2.
    const std::size_t h_len = hash == OaepHash::kSha1 ? 20 : 28;
    const std::string longest(256 - 2 * h_len - 2, 'p');
    EXPECT_EQ(Priv("minion").Decrypt(Pub("minion").Encrypt(longest, hash).value(), hash).value(),
              longest);
    auto too_long = Pub("minion").Encrypt(longest + "p", hash);
    ASSERT_FALSE(too_long.ok());
    EXPECT_EQ(too_long.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST_F(RsaVectorTest, KeysAreSharedAcrossThreads) {
  const RsaPrivateKey master = Priv("master");  // cheap copies of the same EVP_PKEY
  const RsaPublicKey master_pub = master.PublicKey();
  const RsaPublicKey minion_pub = Pub("minion");
  const RsaPrivateKey minion = Priv("minion");
  const std::string expected_sig = Unhex(V()["pkcs1v15"][0]["signature_hex"]);
  const std::string data = Unhex(V()["pkcs1v15"][0]["data_hex"]);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        if (master.Sign(data, SigHash::kSha1).value_or("") != expected_sig) ++failures[t];
        if (!master_pub.Verify(data, expected_sig, SigHash::kSha1).ok()) ++failures[t];
        auto ct = minion_pub.Encrypt("token", OaepHash::kSha1);
        if (!ct.ok() || minion.Decrypt(*ct, OaepHash::kSha1).value_or("") != "token") {
          ++failures[t];
        }
        if (master_pub.X931Recover(master.X931Sign("salt").value()).value_or("") != "salt") {
          ++failures[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(RsaGenerateTest, GeneratedKeyWorksAndRoundTripsThroughPem) {
  auto key = RsaPrivateKey::Generate();
  ASSERT_TRUE(key.ok()) << key.error().ToString();
  EXPECT_EQ(key->size_bytes(), 256u);
  const std::string pem = key->ToPem();
  EXPECT_TRUE(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
  EXPECT_TRUE(pem.ends_with("-----END RSA PRIVATE KEY-----\n"));
  auto reparsed = RsaPrivateKey::FromPem(pem);
  ASSERT_TRUE(reparsed.ok());
  EXPECT_EQ(reparsed->ToPem(), pem);
  const RsaPublicKey pub = key->PublicKey();
  EXPECT_TRUE(pub.ToPem().starts_with("-----BEGIN PUBLIC KEY-----\n"));
  EXPECT_TRUE(pub.ToPem().ends_with("-----END PUBLIC KEY-----\n"));
  EXPECT_EQ(RsaPublicKey::FromPem(pub.ToPem()).value().ToPem(), pub.ToPem());
  // e = 65537: the SPKI of any 2048-bit key with that exponent ends in "IDAQAB".
  EXPECT_NE(pub.ToPem().find("IDAQAB\n-----END PUBLIC KEY-----"), std::string::npos);

  const std::string sig = key->Sign("message", SigHash::kSha224).value();
  EXPECT_TRUE(pub.Verify("message", sig, SigHash::kSha224).ok());
  EXPECT_EQ(pub.X931Recover(key->X931Sign("salt").value()).value(), "salt");
  EXPECT_EQ(key->Decrypt(pub.Encrypt("k", OaepHash::kSha1).value(), OaepHash::kSha1).value(), "k");

  auto other = RsaPrivateKey::Generate(1024);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->size_bytes(), 128u);
  EXPECT_NE(other->PublicKey().ToPem(), pub.ToPem());
}

TEST(RsaGenerateTest, RejectsUnreasonableSizes) {
  for (int bits : {-1, 0, 100, 512, 1023, 16385, 1 << 20}) {
    auto key = RsaPrivateKey::Generate(bits);
    ASSERT_FALSE(key.ok()) << bits;
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument);
  }
}

// auth.json, reqchannel.json, cluster.json: the RSA fields inside real Salt messages.
class RsaProtocolVectorTest : public RsaVectorTest {};

TEST_F(RsaProtocolVectorTest, FirstContactReplyChecksOut) {
  const Json a = LoadVectors("auth.json");
  const Json& fc = a["first_contact"];
  const std::string signed_load = Unhex(fc["reply_signed_load_hex"]);
  const std::string reply_sig = Unhex(fc["reply_sig_hex"]);

  // Outer frame: {enc: "clear", load: <signed inner bytes>, sig: <PKCS#1 v1.5 SHA-1>}.
  const Value outer = Unpack(Unhex(fc["reply_wire_hex"])).value();
  ASSERT_NE(outer.FindStr("load"), nullptr);
  ASSERT_NE(outer.FindStr("sig"), nullptr);
  EXPECT_EQ(*outer.FindStr("load"), signed_load);
  EXPECT_EQ(*outer.FindStr("sig"), reply_sig);
  EXPECT_TRUE(Pub("master").Verify(signed_load, reply_sig, SigHash::kSha1).ok());
  EXPECT_TRUE(Priv("master").Sign(signed_load, SigHash::kSha1).value() == reply_sig);

  const Value inner = Unpack(signed_load).value();
  const Json& decoded = fc["reply_inner_decoded"];
  for (const char* field : {"aes", "session", "sig"}) {
    ASSERT_NE(inner.FindStr(field), nullptr) << field;
    EXPECT_EQ(*inner.FindStr(field), Unhex(decoded[field]["hex"])) << field;
  }
  const std::string aes_plain = fc["checks"]["aes_plain"].get<std::string>();
  const std::string session_plain = fc["checks"]["session_plain"].get<std::string>();

  // sig: X9.31 by the master key over hex(sha256(aes key string)).
  auto recovered = Pub("master").X931Recover(*inner.FindStr("sig"));
  ASSERT_TRUE(recovered.ok()) << recovered.error().ToString();
  EXPECT_EQ(*recovered, Sha256Hex(aes_plain));
  EXPECT_EQ(Priv("master").X931Sign(Sha256Hex(aes_plain)).value(), *inner.FindStr("sig"));

  // aes / session: OAEP-SHA1 to the minion key (key_minion.pem).
  auto minion = RsaPrivateKey::FromPem(
      ReadFile(std::string(HALITE_TEST_DATA_DIR) + "/vectors/key_minion.pem"));
  ASSERT_TRUE(minion.ok());
  const OaepHash hash =
      ParseEncAlgo(fc["request_envelope"]["load"]["enc_algo"].get<std::string>()).value();
  EXPECT_EQ(minion->Decrypt(*inner.FindStr("aes"), hash).value(), aes_plain);
  EXPECT_EQ(minion->Decrypt(*inner.FindStr("session"), hash).value(), session_plain);
  EXPECT_EQ(aes_plain, fc["minion_side_result"]["aes"].get<std::string>());
  EXPECT_EQ(session_plain, fc["minion_side_result"]["session"].get<std::string>());

  // pub_key is clean_key(master.pub): no trailing newline.
  ASSERT_NE(inner.FindStr("pub_key"), nullptr);
  EXPECT_EQ(*inner.FindStr("pub_key"), CleanKey(Pub("master").ToPem()));
  EXPECT_NE(inner.FindStr("pub_key")->back(), '\n');

  // The request's `pub` is the minion key in clean_key form.
  const std::string request_pub = fc["request_envelope"]["load"]["pub"].get<std::string>();
  EXPECT_EQ(request_pub, CleanKey(Pub("minion").ToPem()));
  EXPECT_EQ(RsaPublicKey::FromPem(request_pub).value().ToPem(), Pub("minion").ToPem());
}

TEST_F(RsaProtocolVectorTest, WithTokenAndPendingTokensDecrypt) {
  const Json a = LoadVectors("auth.json");
  const Json& wt = a["with_token"];
  const std::string token_plain = wt["token_plain_ascii"].get<std::string>();
  // Request token: OAEP to the master key. Reply token: OAEP to the minion key.
  EXPECT_EQ(Priv("master")
                .Decrypt(Unhex(wt["request_envelope"]["load"]["token"]["hex"]), OaepHash::kSha1)
                .value(),
            token_plain);
  EXPECT_EQ(Priv("minion")
                .Decrypt(Unhex(wt["reply_inner_decoded"]["token"]["hex"]), OaepHash::kSha1)
                .value(),
            token_plain);
  EXPECT_TRUE(Crypticle::FromKeyString(token_plain).ok());

  const Json& pending = a["pending"];
  auto pending_token =
      Priv("master").Decrypt(Unhex(pending["request_load"]["token"]["hex"]), OaepHash::kSha1);
  ASSERT_TRUE(pending_token.ok()) << pending_token.error().ToString();
  const Value outer = Unpack(Unhex(pending["reply_wire_hex"])).value();
  ASSERT_NE(outer.FindStr("load"), nullptr);
  EXPECT_EQ(*outer.FindStr("sig"), Unhex(pending["reply_sig_hex"]));
  EXPECT_TRUE(Pub("master")
                  .Verify(*outer.FindStr("load"), Unhex(pending["reply_sig_hex"]), SigHash::kSha1)
                  .ok());
}

TEST_F(RsaProtocolVectorTest, MinionTokAndPillarReplyCheckOut) {
  const Json r = LoadVectors("reqchannel.json");
  const std::string tok = Unhex(r["v3_return"]["plain_load_before_encryption"]["tok"]["hex"]);
  EXPECT_EQ(Pub("minion").X931Recover(tok).value(), "salt");
  EXPECT_EQ(Priv("minion").X931Sign("salt").value(), tok);

  const Json& pillar = r["pillar_send_private"];
  const Value reply = Unpack(Unhex(pillar["reply_wire_hex_random"])).value();
  ASSERT_NE(reply.FindStr("key"), nullptr);
  ASSERT_NE(reply.FindStr("pillar"), nullptr);
  auto key_string = Priv("minion").Decrypt(*reply.FindStr("key"), OaepHash::kSha1);
  ASSERT_TRUE(key_string.ok()) << key_string.error().ToString();
  EXPECT_EQ(*key_string, pillar["decrypted_pillar_key_string"].get<std::string>());

  auto one_shot = Crypticle::FromKeyString(*key_string).value();
  auto signed_msg = one_shot.Loads(*reply.FindStr("pillar"));
  ASSERT_TRUE(signed_msg.ok()) << signed_msg.error().ToString();
  ASSERT_NE(signed_msg->FindStr("data"), nullptr);
  ASSERT_NE(signed_msg->FindStr("sig"), nullptr);
  EXPECT_TRUE(Pub("master")
                  .Verify(*signed_msg->FindStr("data"), *signed_msg->FindStr("sig"), SigHash::kSha1)
                  .ok());
  const Value data = Unpack(*signed_msg->FindStr("data")).value();
  ASSERT_NE(data.FindStr("key"), nullptr);
  EXPECT_EQ(*data.FindStr("key"), *reply.FindStr("key"));
  ASSERT_NE(data.FindStr("nonce"), nullptr);
  EXPECT_EQ(*data.FindStr("nonce"), pillar["request_load_plain"]["nonce"].get<std::string>());
}

TEST_F(RsaProtocolVectorTest, ClusterPeerKeyEventChecksOut) {
  const Json c = LoadVectors("cluster.json");
  const Json& event = c["peer_key_event"];
  EXPECT_EQ(
      Priv("peer2").Decrypt(Unhex(event["aes_ciphertext_hex_random"]), OaepHash::kSha224).value(),
      event["peer2_decrypts_to"].get<std::string>());
  EXPECT_EQ(Pub("master").X931Recover(Unhex(event["sig_hex"])).value(),
            event["sig_recovers"].get<std::string>());
  EXPECT_EQ(event["sig_recovers"].get<std::string>(),
            Sha256Hex(event["aes_plain"].get<std::string>()));
}

TEST_F(RsaProtocolVectorTest, PublishSignatureMatches) {
  const Json p = LoadVectors("publish.json");
  const Value frame = Unpack(Unhex(p["zmq_frame_hex"])).value();
  ASSERT_NE(frame.FindStr("load"), nullptr);
  ASSERT_NE(frame.FindStr("sig"), nullptr);
  ASSERT_NE(frame.FindStr("sig_algo"), nullptr);
  const SigHash hash = ParseSigAlgo(*frame.FindStr("sig_algo")).value();
  EXPECT_EQ(HexEncode(*frame.FindStr("sig")), p["sig_hex"].get<std::string>());
  EXPECT_TRUE(Pub("master").Verify(*frame.FindStr("load"), *frame.FindStr("sig"), hash).ok());
  EXPECT_EQ(Priv("master").Sign(*frame.FindStr("load"), hash).value(), *frame.FindStr("sig"));
}

}  // namespace
}  // namespace halite::wire

namespace halite::wire {
namespace {

TEST(RsaOperationCountTest, EachOperationCountsOnceByKind) {
  auto key = RsaPrivateKey::Generate(1024).value();
  RsaPublicKey pub = key.PublicKey();
  const RsaOperationCounts before = RsaOperationsSoFar();
  std::string ct = pub.Encrypt("secret", OaepHash::kSha1).value();
  ASSERT_EQ(key.Decrypt(ct, OaepHash::kSha1).value(), "secret");
  std::string sig = key.Sign("message", SigHash::kSha1).value();
  ASSERT_TRUE(pub.Verify("message", sig, SigHash::kSha1).ok());
  std::string x931 = key.X931Sign("salt").value();
  ASSERT_EQ(pub.X931Recover(x931).value(), "salt");
  const RsaOperationCounts after = RsaOperationsSoFar();
  // Other tests in this binary run sequentially, so the differences are exact.
  EXPECT_EQ(after.private_ops - before.private_ops, 3u);
  EXPECT_EQ(after.public_ops - before.public_ops, 3u);
}

}  // namespace
}  // namespace halite::wire
