// Crypticle behind a valid HMAC. The first byte picks the mode:
//   bit 0: the rest is a plaintext; the harness encrypts it (fixed IV) and calls Loads, so the
//          "pickle::" check, the nonce check and Unpack see fuzzer bytes. bit 1 adds the
//          "pickle::" prefix itself; bit 2 passes a nonce.
//   bit 0 clear: the rest is IV || ciphertext, to which the harness appends the right
//          HMAC-SHA256, so Decrypt's block and padding checks run on arbitrary plaintext.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "halite/common/check.h"
#include "halite/wire/crypticle.h"

namespace {

using halite::wire::Crypticle;

// tests/data/vectors/crypticle.json: key_string is base64 of bytes 0..55; the HMAC key is
// bytes 24..55.
constexpr std::string_view kKey =
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc=";
constexpr std::string_view kNonce = "0123456789abcdef0123456789abcdef";
constexpr char kIv[] = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f";

const Crypticle& Key() {
  static const Crypticle key = *Crypticle::FromKeyString(kKey);
  return key;
}

std::string Mac(std::string_view bytes) {
  unsigned char hmac_key[Crypticle::kHmacKeySize];
  for (std::size_t i = 0; i < sizeof hmac_key; ++i) {
    hmac_key[i] = static_cast<unsigned char>(Crypticle::kAesKeySize + i);
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  HALITE_CHECK(HMAC(EVP_sha256(), hmac_key, sizeof hmac_key,
                    reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out,
                    &out_len) != nullptr);
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (mode & 1) {
    std::string plaintext;
    if (mode & 2) plaintext = Crypticle::kPicklePrefix;
    plaintext.append(rest);
    const std::string sealed = Key().EncryptWithIvForTest(plaintext, std::string_view(kIv, 16));
    auto opened = Key().Decrypt(sealed);
    HALITE_CHECK(opened.ok() && *opened == plaintext) << "Encrypt/Decrypt do not round-trip";
    if (mode & 4) {
      (void)Key().Loads(sealed, kNonce);
    } else {
      (void)Key().Loads(sealed);
    }
    return 0;
  }
  std::string sealed(rest);
  sealed += Mac(rest);
  auto opened = Key().Decrypt(sealed);
  if (rest.size() >= Crypticle::kBlockSize * 2 && rest.size() % Crypticle::kBlockSize == 0) {
    HALITE_CHECK(opened.ok() || opened.error().code != halite::ErrorCode::kUnauthenticated)
        << "a correct HMAC was refused";
  }
  (void)Key().Loads(sealed, (mode & 4) ? std::optional<std::string_view>(kNonce) : std::nullopt);
  return 0;
}
