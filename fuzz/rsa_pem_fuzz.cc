// The RSA public key reader minions' and strangers' `pub` goes through (`_auth`): the strict
// DER fast path (src/wire/rsa_der.h) against OpenSSL's own decoder. Byte 0 picks the armour
// (SPKI or PKCS#1 PEM around the rest as DER, or the rest as raw text); whenever the fast path
// accepts a key, OpenSSL's decoder must accept the same text and give the same key (the fast
// path reads a subset, never more, never differently). RsaPublicKey::FromPem runs on it too.
#include <openssl/decoder.h>
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../src/wire/rsa_der.h"
#include "halite/common/check.h"
#include "halite/wire/encoding.h"
#include "halite/wire/rsa.h"

namespace {

std::string Armour(std::string_view der, bool spki) {
  const std::string b64 = halite::wire::Base64Encode(der);
  std::string out = spki ? "-----BEGIN PUBLIC KEY-----\n" : "-----BEGIN RSA PUBLIC KEY-----\n";
  for (std::size_t i = 0; i < b64.size(); i += 64) out += b64.substr(i, 64) + "\n";
  out += spki ? "-----END PUBLIC KEY-----\n" : "-----END RSA PUBLIC KEY-----\n";
  return out;
}

EVP_PKEY* OpenSslDecode(const std::string& pem) {
  EVP_PKEY* pkey = nullptr;
  OSSL_DECODER_CTX* ctx = OSSL_DECODER_CTX_new_for_pkey(&pkey, "PEM", nullptr, "RSA",
                                                        EVP_PKEY_PUBLIC_KEY, nullptr, nullptr);
  if (ctx == nullptr) return nullptr;
  const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
  std::size_t length = pem.size();
  if (OSSL_DECODER_from_data(ctx, &data, &length) != 1) {
    EVP_PKEY_free(pkey);
    pkey = nullptr;
  }
  OSSL_DECODER_CTX_free(ctx);
  return pkey;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string pem;
  switch (data[0] % 3) {
    case 0:
      pem = Armour(rest, true);
      break;
    case 1:
      pem = Armour(rest, false);
      break;
    default:
      pem = std::string(rest);
      break;
  }
  EVP_PKEY* fast = halite::wire::internal::FastRsaPublicKeyFromPem(pem);
  if (fast != nullptr) {
    EVP_PKEY* slow = OpenSslDecode(pem);
    HALITE_CHECK(slow != nullptr) << "the fast path accepted a key OpenSSL refuses";
    HALITE_CHECK(EVP_PKEY_eq(fast, slow) == 1) << "the fast path read a different key";
    EVP_PKEY_free(slow);
    EVP_PKEY_free(fast);
  }
  (void)halite::wire::RsaPublicKey::FromPem(pem);
  return 0;
}
