// Crypticle::Loads with a fixed key on arbitrary bytes: length and block checks, the HMAC
// check and, rarely, anything after it. crypticle_plain_fuzz gets past the HMAC.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "halite/common/check.h"
#include "halite/wire/crypticle.h"

namespace {

// tests/data/vectors/crypticle.json's key_string.
constexpr std::string_view kKey =
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc=";

const halite::wire::Crypticle& Key() {
  static const halite::wire::Crypticle key = *halite::wire::Crypticle::FromKeyString(kKey);
  return key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)Key().Loads(bytes);
  (void)Key().Loads(bytes, std::string_view("0123456789abcdef0123456789abcdef"));
  (void)halite::wire::Crypticle::FromKeyString(bytes);
  return 0;
}
