#include "halite/wire/crypticle.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "halite/wire/encoding.h"

namespace halite::wire {
namespace {

struct CipherCtxDeleter {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxDeleter>;

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HALITE_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), Bytes(data),
                    data.size(), mac, &mac_len) != nullptr)
      << "HMAC-SHA256 failed";
  HALITE_CHECK(mac_len == Crypticle::kMacSize) << "internal invariant";
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

// AES-192-CBC over whole blocks, no cipher-level padding. Failures here are impossible for
// valid key/IV sizes and block-aligned input, so they are bugs.
std::string AesCbc(bool encrypt, std::string_view key, std::string_view iv,
                   std::string_view input) {
  HALITE_CHECK(key.size() == Crypticle::kAesKeySize) << "internal invariant";
  HALITE_CHECK(iv.size() == Crypticle::kBlockSize) << "internal invariant";
  HALITE_CHECK(input.size() % Crypticle::kBlockSize == 0) << "internal invariant";
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  HALITE_CHECK(ctx != nullptr) << "OpenSSL call failed";
  HALITE_CHECK(EVP_CipherInit_ex(ctx.get(), EVP_aes_192_cbc(), nullptr, Bytes(key), Bytes(iv),
                                 encrypt ? 1 : 0) == 1)
      << "OpenSSL call failed";
  HALITE_CHECK(EVP_CIPHER_CTX_set_padding(ctx.get(), 0) == 1) << "OpenSSL call failed";
  std::string out(input.size() + Crypticle::kBlockSize, '\0');
  auto* out_bytes = reinterpret_cast<unsigned char*>(out.data());
  // EVP_CipherUpdate takes an int length; feed block-aligned chunks so any size works.
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  std::size_t written = 0;
  for (std::size_t offset = 0; offset < input.size(); offset += kChunk) {
    const std::string_view chunk = input.substr(offset, kChunk);
    int len = 0;
    HALITE_CHECK(EVP_CipherUpdate(ctx.get(), out_bytes + written, &len, Bytes(chunk),
                                  static_cast<int>(chunk.size())) == 1)
        << "OpenSSL call failed";
    written += static_cast<std::size_t>(len);
  }
  int final_len = 0;
  HALITE_CHECK(EVP_CipherFinal_ex(ctx.get(), out_bytes + written, &final_len) == 1)
      << "OpenSSL call failed";
  out.resize(written + static_cast<std::size_t>(final_len));
  return out;
}

std::string PlaintextFor(const Value& obj, std::optional<std::string_view> nonce) {
  std::string plaintext(Crypticle::kPicklePrefix);
  if (nonce.has_value()) plaintext.append(*nonce);
  PackTo(obj, Packing::kWire, plaintext);
  return plaintext;
}

}  // namespace

std::string Crypticle::GenerateKeyString() { return Base64Encode(RandomBytes(kKeySize)); }

Result<Crypticle> Crypticle::FromKeyString(std::string_view key_string) {
  auto decoded = Base64Decode(key_string);
  if (!decoded.ok()) {
    return Error::InvalidArgument("crypticle key string: " + decoded.error().message);
  }
  if (decoded->size() != kKeySize) {
    return Error::InvalidArgument("crypticle key string decodes to " +
                                  std::to_string(decoded->size()) + " bytes, want 56");
  }
  std::string aes_key = decoded->substr(0, kAesKeySize);
  std::string hmac_key = decoded->substr(kAesKeySize);
  return Crypticle(std::string(key_string), std::move(aes_key), std::move(hmac_key));
}

std::string Crypticle::Encrypt(std::string_view plaintext) const {
  return EncryptWithIvForTest(plaintext, RandomBytes(kBlockSize));
}

std::string Crypticle::EncryptWithIvForTest(std::string_view plaintext, std::string_view iv) const {
  HALITE_CHECK(iv.size() == kBlockSize) << "IV must be 16 bytes";
  const std::size_t pad = kBlockSize - plaintext.size() % kBlockSize;  // 1..16
  std::string padded(plaintext);
  padded.append(pad, static_cast<char>(pad));
  std::string out(iv);
  out.append(AesCbc(/*encrypt=*/true, aes_key_, iv, padded));
  out.append(HmacSha256(hmac_key_, out));
  return out;
}

Result<std::string> Crypticle::Decrypt(std::string_view data) const {
  if (data.size() < kBlockSize + kBlockSize + kMacSize) {
    return Error::InvalidArgument("crypticle: ciphertext too short");
  }
  if ((data.size() - kMacSize) % kBlockSize != 0) {
    return Error::InvalidArgument("crypticle: ciphertext is not a whole number of blocks");
  }
  const std::string_view signed_part = data.substr(0, data.size() - kMacSize);
  const std::string_view mac = data.substr(data.size() - kMacSize);
  if (!ConstantTimeEquals(HmacSha256(hmac_key_, signed_part), mac)) {
    return Error::Unauthenticated("crypticle: message authentication failed");
  }
  std::string plaintext = AesCbc(/*encrypt=*/false, aes_key_, signed_part.substr(0, kBlockSize),
                                 signed_part.substr(kBlockSize));
  const auto pad = static_cast<unsigned char>(plaintext.back());
  if (pad == 0 || pad > kBlockSize) {
    return Error::InvalidArgument("crypticle: bad padding length");
  }
  plaintext.resize(plaintext.size() - pad);
  return plaintext;
}

std::string Crypticle::Dumps(const Value& obj, std::optional<std::string_view> nonce) const {
  return Encrypt(PlaintextFor(obj, nonce));
}

std::string Crypticle::DumpsWithIvForTest(const Value& obj, std::optional<std::string_view> nonce,
                                          std::string_view iv) const {
  return EncryptWithIvForTest(PlaintextFor(obj, nonce), iv);
}

Result<Value> Crypticle::Loads(std::string_view data, std::optional<std::string_view> nonce,
                               const UnpackLimits& limits) const {
  HALITE_ASSIGN_OR_RETURN(const std::string plaintext, Decrypt(data));
  std::string_view rest(plaintext);
  if (!rest.starts_with(kPicklePrefix)) return Value::EmptyMap();
  rest.remove_prefix(kPicklePrefix.size());
  if (nonce.has_value() && !nonce->empty()) {
    // Salt compares data[:32] with the nonce and then drops those 32 bytes.
    const std::string_view sent = rest.substr(0, std::min(kNonceSize, rest.size()));
    rest.remove_prefix(sent.size());
    if (sent != *nonce) return Error::Unauthenticated("Nonce verification error");
  }
  return Unpack(rest, limits);
}

Value Crypticle::SerialGuard::Apply(Value decoded) {
  Value* serial = decoded.Find("serial");
  if (serial == nullptr) return decoded;
  const std::optional<std::uint64_t> value = serial->uint64();
  const bool is_int = serial->is_int();
  decoded.Erase("serial");
  if (!is_int || !value.has_value() || *value <= last_serial_) return Value::EmptyMap();
  last_serial_ = *value;
  return decoded;
}

}  // namespace halite::wire
