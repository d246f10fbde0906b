// The sign-in fast paths of rsa.cc: per-thread EVP_PKEY_CTX reuse (rsa_ctx.h) and the strict
// PEM reader for public keys (rsa_der.h). The results must be exactly those of the slow paths.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "../../src/wire/rsa_der.h"
#include "halite/wire/encoding.h"
#include "halite/wire/rsa.h"

namespace halite::wire {
namespace {

const RsaPrivateKey& Key() {
  static const RsaPrivateKey* key = new RsaPrivateKey(RsaPrivateKey::Generate(2048).value());
  return *key;
}

// Runs `fn` on a thread of its own, so that context counts start at zero.
template <typename Fn>
void OnFreshThread(Fn fn) {
  std::thread thread(fn);
  thread.join();
}

TEST(RsaContextReuseTest, RepeatedOperationsOnOneKeyMakeOneContext) {
  OnFreshThread([] {
    const RsaPublicKey pub = Key().PublicKey();
    ASSERT_EQ(RsaContextsMadeOnThisThreadForTest(), 0u);
    for (int i = 0; i < 5; ++i) {
      auto ct = pub.Encrypt("secret " + std::to_string(i), OaepHash::kSha1);
      ASSERT_TRUE(ct.ok()) << ct.error().ToString();
      EXPECT_EQ(Key().Decrypt(*ct, OaepHash::kSha1).value(), "secret " + std::to_string(i));
    }
    EXPECT_EQ(RsaContextsMadeOnThisThreadForTest(), 2u);  // one encrypt, one decrypt context
    // Another hash is another context, and both keep working.
    auto ct224 = pub.Encrypt("other hash", OaepHash::kSha224);
    ASSERT_TRUE(ct224.ok());
    EXPECT_EQ(Key().Decrypt(*ct224, OaepHash::kSha224).value(), "other hash");
    EXPECT_EQ(RsaContextsMadeOnThisThreadForTest(), 4u);
    EXPECT_FALSE(Key().Decrypt(*ct224, OaepHash::kSha1).ok())
        << "the SHA-1 context decrypted SHA-224";
  });
}

TEST(RsaContextReuseTest, SignaturesFromAReusedContextAreTheSameAndVerify) {
  OnFreshThread([] {
    const RsaPublicKey pub = Key().PublicKey();
    for (SigHash hash : {SigHash::kSha1, SigHash::kSha224}) {
      const std::string first = Key().Sign("message", hash).value();
      EXPECT_EQ(Key().Sign("message", hash).value(), first) << "PKCS#1 v1.5 is deterministic";
      EXPECT_TRUE(pub.Verify("message", first, hash).ok());
      EXPECT_FALSE(pub.Verify("massage", first, hash).ok());
      EXPECT_TRUE(pub.Verify("message", first, hash).ok()) << "a failed verify broke the next";
    }
    const std::string tok = Key().X931Sign("salt").value();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(pub.X931Recover(tok).value(), "salt");
    EXPECT_FALSE(pub.X931Recover(std::string(tok.size(), '\x01')).ok());
    EXPECT_EQ(pub.X931Recover(tok).value(), "salt");
  });
}

TEST(RsaContextReuseTest, AFailedDecryptDoesNotSpoilTheNextOne) {
  OnFreshThread([] {
    const RsaPublicKey pub = Key().PublicKey();
    const std::string ct = pub.Encrypt("payload", OaepHash::kSha1).value();
    std::string bad = ct;
    bad[10] = static_cast<char>(bad[10] ^ 0x40);
    EXPECT_EQ(Key().Decrypt(bad, OaepHash::kSha1).error().code, ErrorCode::kUnauthenticated);
    EXPECT_EQ(Key().Decrypt(ct, OaepHash::kSha1).value(), "payload");
  });
}

TEST(RsaContextReuseTest, MoreKeysThanSlotsEvictAndStillWork) {
  OnFreshThread([] {
    std::vector<RsaPublicKey> keys;
    const RsaPublicKey pub = Key().PublicKey();
    // Twenty distinct key objects (each its own EVP_PKEY) for one private key.
    for (int i = 0; i < 20; ++i) keys.push_back(RsaPublicKey::FromPem(pub.ToPem()).value());
    for (int round = 0; round < 2; ++round) {
      for (const RsaPublicKey& key : keys) {
        auto ct = key.Encrypt("x", OaepHash::kSha1);
        ASSERT_TRUE(ct.ok());
        EXPECT_EQ(Key().Decrypt(*ct, OaepHash::kSha1).value(), "x");
      }
    }
    // Each key's context was evicted before its turn came again: 2 x 20 encrypt contexts,
    // and the one decrypt context stayed (most recently used every time).
    EXPECT_EQ(RsaContextsMadeOnThisThreadForTest(), 41u);
    keys.clear();  // the keys live on in cached contexts until evicted: nothing dangles
    EXPECT_EQ(pub.Encrypt("y", OaepHash::kSha1).ok(), true);
  });
}

TEST(RsaContextReuseTest, ThreadsShareKeysButNotContexts) {
  const RsaPublicKey pub = Key().PublicKey();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto ct = pub.Encrypt("t" + std::to_string(t), OaepHash::kSha1);
        if (ct.ok() && Key().Decrypt(*ct, OaepHash::kSha1).value() == "t" + std::to_string(t)) {
          ++ok[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok, std::vector<int>(4, 20));
}

// --- the public key PEM reader ---------------------------------------------------------------

std::string WithCrLf(const std::string& pem) {
  std::string out;
  for (char c : pem) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

TEST(RsaPublicPemTest, ShapesMinionsSendParseToTheSameKey) {
  const std::string spki = Key().PublicKey().ToPem();
  const RsaPublicKey parsed = RsaPublicKey::FromPem(spki).value();
  EXPECT_EQ(parsed.ToPem(), spki);
  // Salt's pub field: no trailing newline; Windows line ends; surrounding blanks.
  const std::string clean = CleanKey(spki);
  EXPECT_EQ(RsaPublicKey::FromPem(clean).value().ToPem(), spki);
  EXPECT_EQ(RsaPublicKey::FromPem(WithCrLf(spki)).value().ToPem(), spki);
  EXPECT_EQ(RsaPublicKey::FromPem("\n  " + spki + "\n\n").value().ToPem(), spki);
  // One long base64 line instead of 64-column lines.
  std::string one_line = "-----BEGIN PUBLIC KEY-----\n";
  std::string body = clean.substr(clean.find('\n') + 1);
  body = body.substr(0, body.rfind('\n'));
  for (char c : body) {
    if (c != '\n') one_line += c;
  }
  one_line += "\n-----END PUBLIC KEY-----\n";
  EXPECT_EQ(RsaPublicKey::FromPem(one_line).value().ToPem(), spki);
  // The key signs and verifies as the original.
  const std::string sig = Key().Sign("m", SigHash::kSha1).value();
  EXPECT_TRUE(parsed.Verify("m", sig, SigHash::kSha1).ok());
}

// DER helpers to build public keys the fast path must refuse.
std::string Tlv(unsigned char tag, const std::string& contents) {
  std::string out(1, static_cast<char>(tag));
  if (contents.size() < 0x80) {
    out += static_cast<char>(contents.size());
  } else if (contents.size() < 0x100) {
    out += '\x81';
    out += static_cast<char>(contents.size());
  } else {
    out += '\x82';
    out += static_cast<char>(contents.size() >> 8);
    out += static_cast<char>(contents.size() & 0xff);
  }
  return out + contents;
}
// As PEM writers armour it: 64 base64 characters a line.
std::string Pkcs1Pem(const std::string& der) {
  const std::string b64 = Base64Encode(der);
  std::string out = "-----BEGIN RSA PUBLIC KEY-----\n";
  for (std::size_t i = 0; i < b64.size(); i += 64) out += b64.substr(i, 64) + "\n";
  return out + "-----END RSA PUBLIC KEY-----\n";
}

TEST(RsaPublicPemTest, BadComponentsAreRefusedWhicheverPathReadsThem) {
  std::string n(256, '\xab');
  n.back() = '\x01';  // odd
  const std::string e("\x01\x00\x01", 3);
  const std::string good = Tlv(0x30, Tlv(0x02, std::string(1, '\0') + n) + Tlv(0x02, e));
  EXPECT_TRUE(RsaPublicKey::FromPem(Pkcs1Pem(good)).ok());
  // A negative modulus (no leading zero before a high bit), or a non-minimal one: not read by
  // the fast path (what OpenSSL's decoder makes of them is what it always made of them).
  const std::string negative = Tlv(0x30, Tlv(0x02, n) + Tlv(0x02, e));
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(Pkcs1Pem(negative)), nullptr);
  const std::string padded = Tlv(0x30, Tlv(0x02, std::string(2, '\0') + n) + Tlv(0x02, e));
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(Pkcs1Pem(padded)), nullptr);
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem("junk\n" + Pkcs1Pem(good)), nullptr);
  // Armour PEM writers do not make is left to OpenSSL's decoder (rsa_pem_fuzz: the last base64
  // line ran into "-----END", which the fast path read and OpenSSL refuses).
  const std::string pem = Pkcs1Pem(good);
  const auto end_at = pem.find("\n-----END");
  ASSERT_NE(end_at, std::string::npos);
  std::string run_in = pem;
  run_in.erase(end_at, 1);
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(run_in), nullptr);
  std::string short_line = pem;
  short_line.erase(short_line.find('\n', 40) - 1, 1);  // a first line of 63
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(short_line), nullptr);
  std::string crlf = pem;
  crlf.insert(crlf.find('\n'), "\r");
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(crlf), nullptr);
  EVP_PKEY* fast = internal::FastRsaPublicKeyFromPem(Pkcs1Pem(good));
  EXPECT_NE(fast, nullptr);
  EVP_PKEY_free(fast);
  // An even exponent; an exponent of 1; an even modulus.
  EXPECT_FALSE(RsaPublicKey::FromPem(Pkcs1Pem(Tlv(0x30, Tlv(0x02, std::string(1, '\0') + n) +
                                                            Tlv(0x02, std::string("\x01\x00", 2)))))
                   .ok());
  EXPECT_FALSE(RsaPublicKey::FromPem(
                   Pkcs1Pem(Tlv(0x30, Tlv(0x02, std::string(1, '\0') + n) + Tlv(0x02, "\x01"))))
                   .ok());
  std::string even = n;
  even.back() = '\x02';
  EXPECT_FALSE(RsaPublicKey::FromPem(
                   Pkcs1Pem(Tlv(0x30, Tlv(0x02, std::string(1, '\0') + even) + Tlv(0x02, e))))
                   .ok());
  // Bytes after the key; a truncated key; a tiny modulus.
  EXPECT_EQ(internal::FastRsaPublicKeyFromPem(Pkcs1Pem(good + std::string("\x05\x00", 2))),
            nullptr);
  EXPECT_FALSE(RsaPublicKey::FromPem(Pkcs1Pem(good.substr(0, good.size() - 2))).ok());
  EXPECT_FALSE(
      RsaPublicKey::FromPem(Pkcs1Pem(Tlv(0x30, Tlv(0x02, "\x7f\x01") + Tlv(0x02, e)))).ok());
  // Armour without a body, or a body that is not base64.
  EXPECT_FALSE(RsaPublicKey::FromPem("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----").ok());
  EXPECT_FALSE(RsaPublicKey::FromPem("-----BEGIN PUBLIC KEY-----END PUBLIC KEY-----").ok());
  EXPECT_FALSE(
      RsaPublicKey::FromPem("-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n").ok());
}

}  // namespace
}  // namespace halite::wire
