// RSA keys and the primitives Salt uses (salt-wire.md 4.1, 4.2): OAEP encryption,
// PKCS#1 v1.5 signatures and the X9.31 "private encrypt" / "public decrypt" pair.
//
// Key objects share one immutable EVP_PKEY (copies are cheap), and operations run on
// EVP_PKEY_CTXs kept per thread (a few per thread, reused while the same key and operation
// come back), so all const methods may be called concurrently from any thread. Parse
// and crypto failures are returned as errors; the OpenSSL error queue of the calling thread is
// cleared before returning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "halite/common/result.h"

struct evp_pkey_st;  // EVP_PKEY, kept out of this header

namespace halite::wire {

// enc_algo on the wire: OAEP with MGF1 over the same hash and an empty label.
enum class OaepHash { kSha1, kSha224 };
// "OAEP-SHA1" / "OAEP-SHA224"; anything else is InvalidArgument.
Result<OaepHash> ParseEncAlgo(std::string_view name);
std::string_view EncAlgoName(OaepHash hash);

// sig_algo on the wire: RSASSA-PKCS1-v1_5 with the DigestInfo of the hash.
enum class SigHash { kSha1, kSha224 };
// "PKCS1v15-SHA1" / "PKCS1v15-SHA224"; anything else is InvalidArgument.
Result<SigHash> ParseSigAlgo(std::string_view name);
std::string_view SigAlgoName(SigHash hash);

// Salt's clean_key: strip surrounding whitespace, split into lines (\n, \r\n, \r, \v, \f,
// \x1c-\x1e, as Python's str.splitlines does for ASCII) and join them with "\n". Key
// comparisons apply it to both sides.
std::string CleanKey(std::string_view pem);

class RsaPublicKey {
 public:
  // Accepts SPKI ("BEGIN PUBLIC KEY") and PKCS#1 ("BEGIN RSA PUBLIC KEY") PEM. Private-key
  // PEMs, other key types, moduli above 16384 bits and corrupt text are InvalidArgument.
  static Result<RsaPublicKey> FromPem(std::string_view pem);

  // SPKI PEM as OpenSSL / Python cryptography write it: 64-column lines, trailing "\n".
  // (The `pub_key` auth field is CleanKey of this, without the newline.)
  std::string ToPem() const;

  // InvalidArgument when the plaintext is too long for the key and hash.
  Result<std::string> Encrypt(std::string_view plaintext, OaepHash hash) const;
  // OkStatus when `signature` is a valid PKCS#1 v1.5 signature of `message`; otherwise
  // Unauthenticated (including a signature of the wrong length).
  Status Verify(std::string_view message, std::string_view signature, SigHash hash) const;
  // RSA public operation with X9.31 padding and no digest (OpenSSL's RSA_public_decrypt with
  // RSA_X931_PADDING): returns the message that RsaPrivateKey::X931Sign signed.
  // InvalidArgument unless the signature is exactly size_bytes() long; Unauthenticated when it
  // is not below the modulus or the padding does not check out.
  Result<std::string> X931Recover(std::string_view signature) const;

  // Modulus length in bytes (256 for a 2048-bit key).
  std::size_t size_bytes() const;

 private:
  explicit RsaPublicKey(std::shared_ptr<evp_pkey_st> pkey) : pkey_(std::move(pkey)) {}
  friend class RsaPrivateKey;

  std::shared_ptr<evp_pkey_st> pkey_;  // never null; never mutated after construction
};

class RsaPrivateKey {
 public:
  // A fresh key with e = 65537. InvalidArgument unless 1024 <= bits <= 16384.
  static Result<RsaPrivateKey> Generate(int bits = 2048);
  // Unencrypted PKCS#1 ("BEGIN RSA PRIVATE KEY") or PKCS#8 ("BEGIN PRIVATE KEY") PEM.
  // Encrypted keys, public keys, other key types and corrupt text are InvalidArgument.
  static Result<RsaPrivateKey> FromPem(std::string_view pem);

  // PKCS#1 "BEGIN RSA PRIVATE KEY" PEM (OpenSSL's traditional format, what Salt writes),
  // 64-column lines, trailing "\n". The result holds the secret key: do not log it.
  std::string ToPem() const;

  RsaPublicKey PublicKey() const;

  // OAEP decryption. InvalidArgument when the ciphertext is not size_bytes() long;
  // Unauthenticated when it does not decrypt (wrong key, hash or corrupt bytes).
  Result<std::string> Decrypt(std::string_view ciphertext, OaepHash hash) const;
  // Deterministic PKCS#1 v1.5 signature (size_bytes() long).
  Result<std::string> Sign(std::string_view message, SigHash hash) const;
  // RSA private operation with X9.31 padding over the raw message (no digest), then
  // min(s, n - s); the output is size_bytes() long and deterministic. InvalidArgument when the
  // message is longer than size_bytes() - 2, or exactly size_bytes() - 3 long (that padding,
  // 0x6B 0xBA, is rejected by every X9.31 checker, OpenSSL's included).
  Result<std::string> X931Sign(std::string_view message) const;

  std::size_t size_bytes() const;

 private:
  explicit RsaPrivateKey(std::shared_ptr<evp_pkey_st> pkey) : pkey_(std::move(pkey)) {}

  std::shared_ptr<evp_pkey_st> pkey_;  // never null; never mutated after construction
};

// Process-wide counts of RSA operations since start, over every key and thread (relaxed
// atomics: cheap, and exact once the counted calls have returned). Private: Decrypt, Sign,
// X931Sign. Public: Encrypt, Verify, X931Recover. For /metrics and the benchmarks, which
// price a sign-in in RSA operations.
struct RsaOperationCounts {
  std::uint64_t private_ops = 0;
  std::uint64_t public_ops = 0;
};
RsaOperationCounts RsaOperationsSoFar();

// EVP_PKEY_CTXs the calling thread has made since it started: an operation that reuses the
// thread's context for its key makes none.
std::uint64_t RsaContextsMadeOnThisThreadForTest();

}  // namespace halite::wire
