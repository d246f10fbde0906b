// Crypticle: Salt's symmetric envelope (salt-wire.md 4.3). AES-192-CBC with PKCS#7-style
// padding, then HMAC-SHA256 over IV || ciphertext: output = IV(16) || C || T(32).
//
// A Crypticle is immutable after construction, so concurrent const use from any number of
// threads is safe. Copies are cheap (three short strings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::wire {

class Crypticle {
 public:
  static constexpr std::size_t kAesKeySize = 24;
  static constexpr std::size_t kHmacKeySize = 32;
  static constexpr std::size_t kKeySize = kAesKeySize + kHmacKeySize;  // 56
  static constexpr std::size_t kBlockSize = 16;
  static constexpr std::size_t kMacSize = 32;
  static constexpr std::size_t kNonceSize = 32;
  static constexpr std::string_view kPicklePrefix = "pickle::";

  // base64 of 56 fresh random bytes (76 characters ending in '=').
  static std::string GenerateKeyString();
  // InvalidArgument unless `key_string` is strict base64 of exactly 56 bytes.
  static Result<Crypticle> FromKeyString(std::string_view key_string);

  const std::string& key_string() const { return key_string_; }

  // IV || AES-192-CBC(padded plaintext) || HMAC-SHA256(hmac_key, IV || C), with a random IV.
  std::string Encrypt(std::string_view plaintext) const;
  // Same with a caller-chosen IV (must be 16 bytes); deterministic, for known-answer tests.
  std::string EncryptWithIvForTest(std::string_view plaintext, std::string_view iv) const;

  // Errors: InvalidArgument when `data` is shorter than IV + one block + MAC or its cipher part
  // is not a whole number of blocks; Unauthenticated when the HMAC does not match (checked in
  // constant time before anything is decrypted); InvalidArgument when the last plaintext byte
  // is 0 or greater than 16. Otherwise that many bytes are stripped without looking at them,
  // as Salt does.
  Result<std::string> Decrypt(std::string_view data) const;

  // Encrypt("pickle::" || nonce || Pack(obj, kWire)). An absent or empty nonce adds nothing
  // (Salt tests `if nonce:`).
  std::string Dumps(const Value& obj, std::optional<std::string_view> nonce = std::nullopt) const;
  std::string DumpsWithIvForTest(const Value& obj, std::optional<std::string_view> nonce,
                                 std::string_view iv) const;

  // Decrypt, then:
  // - no "pickle::" prefix: an empty map, not an error (Salt's quirk);
  // - a non-empty nonce given: the next 32 bytes must equal it, else
  //   Unauthenticated("Nonce verification error");
  // - Unpack the rest under `limits` (its errors pass through).
  // The publish replay guard is separate: see SerialGuard.
  Result<Value> Loads(std::string_view data, std::optional<std::string_view> nonce = std::nullopt,
                      const UnpackLimits& limits = {}) const;

  // The publish replay guard (4.3, 4.8) that Salt keeps inside its decrypting crypticle. Feed
  // it every value Loads returns for one AES key; Reset it when the key changes. If the value
  // is a map with a "serial" key, the key is removed; a serial that is not an integer or is
  // not greater than the highest one seen so far turns the value into an empty map; otherwise
  // the serial is remembered. Other values pass through unchanged.
  // Not thread-safe: one guard per consumer.
  class SerialGuard {
   public:
    Value Apply(Value decoded);
    void Reset() { last_serial_ = 0; }
    std::uint64_t last_serial() const { return last_serial_; }

   private:
    std::uint64_t last_serial_ = 0;
  };

 private:
  Crypticle(std::string key_string, std::string aes_key, std::string hmac_key)
      : key_string_(std::move(key_string)),
        aes_key_(std::move(aes_key)),
        hmac_key_(std::move(hmac_key)) {}

  std::string key_string_;
  std::string aes_key_;   // 24 bytes
  std::string hmac_key_;  // 32 bytes
};

}  // namespace halite::wire
