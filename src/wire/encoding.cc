#include "halite/wire/encoding.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>

namespace halite::wire {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// 0..63 for alphabet characters, -1 otherwise.
constexpr std::array<std::int8_t, 256> MakeBase64Table() {
  std::array<std::int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(kBase64Alphabet[i])] = i;
  return table;
}
constexpr std::array<std::int8_t, 256> kBase64Table = MakeBase64Table();

std::string Digest(const EVP_MD* md, std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  HALITE_CHECK(EVP_Digest(bytes.data(), bytes.size(), out, &out_len, md, nullptr) == 1)
      << "EVP_Digest failed";
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

}  // namespace

std::string HexEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHexDigits[c >> 4]);
    out.push_back(kHexDigits[c & 0xf]);
  }
  return out;
}

Result<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return Error::InvalidArgument("hex: odd length");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexValue(hex[i]);
    const int lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return Error::InvalidArgument("hex: invalid character");
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out.push_back(kBase64Alphabet[(group >> 18) & 63]);
    out.push_back(kBase64Alphabet[(group >> 12) & 63]);
    out.push_back(kBase64Alphabet[(group >> 6) & 63]);
    out.push_back(kBase64Alphabet[group & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t group = byte(i) << 16;
    out.push_back(kBase64Alphabet[(group >> 18) & 63]);
    out.push_back(kBase64Alphabet[(group >> 12) & 63]);
    out.append("==");
  } else if (rest == 2) {
    const std::uint32_t group = (byte(i) << 16) | (byte(i + 1) << 8);
    out.push_back(kBase64Alphabet[(group >> 18) & 63]);
    out.push_back(kBase64Alphabet[(group >> 12) & 63]);
    out.push_back(kBase64Alphabet[(group >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return Error::InvalidArgument("base64: length is not a multiple of 4");
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') {
    padding = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  }
  const std::size_t data_chars = text.size() - padding;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t accumulator = 0;
  int bits = 0;
  for (std::size_t i = 0; i < data_chars; ++i) {
    const int value = kBase64Table[static_cast<unsigned char>(text[i])];
    if (value < 0) return Error::InvalidArgument("base64: invalid character");
    accumulator = (accumulator << 6) | static_cast<std::uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((accumulator >> bits) & 0xff));
    }
  }
  return out;
}

std::string Sha256(std::string_view bytes) { return Digest(EVP_sha256(), bytes); }
std::string Sha1(std::string_view bytes) { return Digest(EVP_sha1(), bytes); }
std::string Sha256Hex(std::string_view bytes) { return HexEncode(Sha256(bytes)); }
std::string Sha1Hex(std::string_view bytes) { return HexEncode(Sha1(bytes)); }

std::string RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  // RAND_bytes takes an int length; fill in chunks so any size_t works.
  std::size_t done = 0;
  while (done < n) {
    const std::size_t chunk = std::min<std::size_t>(n - done, INT_MAX);
    HALITE_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(out.data() + done),
                            static_cast<int>(chunk)) == 1)
        << "RAND_bytes failed";
    done += chunk;
  }
  return out;
}

std::string RandomNonce() { return HexEncode(RandomBytes(16)); }

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace halite::wire
