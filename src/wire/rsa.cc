#include "halite/wire/rsa.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "rsa_ctx.h"
#include "rsa_der.h"

namespace halite::wire {
namespace {

std::atomic<std::uint64_t> private_ops{0};
std::atomic<std::uint64_t> public_ops{0};
void CountPrivate() { private_ops.fetch_add(1, std::memory_order_relaxed); }
void CountPublic() { public_ops.fetch_add(1, std::memory_order_relaxed); }

constexpr int kMinBits = 512;
constexpr int kMaxBits = 16384;  // OPENSSL_RSA_MAX_MODULUS_BITS: larger keys are unusable

struct DecoderCtxDeleter {
  void operator()(OSSL_DECODER_CTX* ctx) const { OSSL_DECODER_CTX_free(ctx); }
};
using DecoderCtx = std::unique_ptr<OSSL_DECODER_CTX, DecoderCtxDeleter>;
struct EncoderCtxDeleter {
  void operator()(OSSL_ENCODER_CTX* ctx) const { OSSL_ENCODER_CTX_free(ctx); }
};
using EncoderCtx = std::unique_ptr<OSSL_ENCODER_CTX, EncoderCtxDeleter>;
struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;
struct BnDeleter {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
using Bn = std::unique_ptr<BIGNUM, BnDeleter>;

std::shared_ptr<EVP_PKEY> Share(EVP_PKEY* pkey) {
  return std::shared_ptr<EVP_PKEY>(pkey, [](EVP_PKEY* p) { EVP_PKEY_free(p); });
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* MutableBytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

// The newest OpenSSL error on this thread as text, and an empty queue afterwards so later
// calls on this thread do not see stale errors.
std::string TakeOpenSslError() {
  const unsigned long code = ERR_peek_last_error();
  std::string text = "unknown OpenSSL error";
  if (code != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    text = buffer;
  }
  ERR_clear_error();
  return text;
}

// Never ask for a passphrase (the default would prompt on the terminal): encrypted PEM fails.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return -1; }

const EVP_MD* OaepMd(OaepHash hash) {
  return hash == OaepHash::kSha224 ? EVP_sha224() : EVP_sha1();
}
const EVP_MD* SigMd(SigHash hash) { return hash == SigHash::kSha224 ? EVP_sha224() : EVP_sha1(); }

Result<std::shared_ptr<EVP_PKEY>> CheckedRsaKey(std::shared_ptr<EVP_PKEY> pkey,
                                                const std::string& prefix);

// Decodes one RSA key of the given selection from PEM text: public keys in the shapes minions
// send through rsa_der.h, everything else through OpenSSL's decoder.
Result<std::shared_ptr<EVP_PKEY>> DecodePem(std::string_view pem, int selection,
                                            std::string_view what) {
  const std::string prefix = std::string(what) + " PEM: ";
  if (pem.empty()) return Error::InvalidArgument(prefix + "empty");
  EVP_PKEY* raw = nullptr;
  if (selection == EVP_PKEY_PUBLIC_KEY) raw = internal::FastRsaPublicKeyFromPem(pem);
  if (raw != nullptr) return CheckedRsaKey(Share(raw), prefix);
  DecoderCtx ctx(
      OSSL_DECODER_CTX_new_for_pkey(&raw, "PEM", nullptr, "RSA", selection, nullptr, nullptr));
  if (ctx == nullptr) return Error::Internal(prefix + TakeOpenSslError());
  OSSL_DECODER_CTX_set_pem_password_cb(ctx.get(), &NoPassphrase, nullptr);
  const unsigned char* data = Bytes(pem);
  std::size_t length = pem.size();
  if (OSSL_DECODER_from_data(ctx.get(), &data, &length) != 1 || raw == nullptr) {
    EVP_PKEY_free(raw);
    return Error::InvalidArgument(prefix + "cannot parse: " + TakeOpenSslError());
  }
  ERR_clear_error();  // decoders that were tried and failed may leave entries behind
  return CheckedRsaKey(Share(raw), prefix);
}

// The checks every decoded key goes through, whichever way it was decoded.
Result<std::shared_ptr<EVP_PKEY>> CheckedRsaKey(std::shared_ptr<EVP_PKEY> pkey,
                                                const std::string& prefix) {
  if (!EVP_PKEY_is_a(pkey.get(), "RSA")) return Error::InvalidArgument(prefix + "not an RSA key");
  const int bits = EVP_PKEY_get_bits(pkey.get());
  if (bits < kMinBits || bits > kMaxBits) {
    return Error::InvalidArgument(prefix + "unsupported modulus size " + std::to_string(bits));
  }
  // The component checks Python cryptography applies on load: n odd, e odd, 3 <= e < n.
  BIGNUM* raw_n = nullptr;
  BIGNUM* raw_e = nullptr;
  const bool got_n = EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_N, &raw_n) == 1;
  const bool got_e = EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_E, &raw_e) == 1;
  Bn n(raw_n);
  Bn e(raw_e);
  if (!got_n || !got_e) return Error::InvalidArgument(prefix + TakeOpenSslError());
  if (!BN_is_odd(n.get()) || !BN_is_odd(e.get()) || BN_cmp(e.get(), BN_value_one()) <= 0 ||
      BN_cmp(e.get(), n.get()) >= 0) {
    return Error::InvalidArgument(prefix + "invalid RSA modulus or exponent");
  }
  return pkey;
}

using internal::RsaCtxOp;

// Explicitly fetched digests: the EVP_sha1() objects make every EVP_Digest fetch again.
const EVP_MD* FetchedMd(SigHash hash) {
  static EVP_MD* const sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static EVP_MD* const sha224 = EVP_MD_fetch(nullptr, "SHA224", nullptr);
  const EVP_MD* md = hash == SigHash::kSha224 ? sha224 : sha1;
  HALITE_CHECK(md != nullptr) << "no SHA-1/SHA-224 in the default provider";
  return md;
}

std::string MessageDigest(std::string_view message, SigHash hash) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HALITE_CHECK(EVP_Digest(message.data(), message.size(), out, &length, FetchedMd(hash), nullptr) ==
               1)
      << "EVP_Digest failed";
  return std::string(reinterpret_cast<const char*>(out), length);
}

// The thread's OAEP context for `op` (kEncrypt or kDecrypt) on `pkey`.
EVP_PKEY_CTX* OaepCtx(EVP_PKEY* pkey, RsaCtxOp op, OaepHash hash) {
  return internal::ThreadRsaCtx(pkey, op, static_cast<int>(hash), [&](EVP_PKEY_CTX* ctx) {
    const EVP_MD* md = OaepMd(hash);
    const int init =
        op == RsaCtxOp::kEncrypt ? EVP_PKEY_encrypt_init(ctx) : EVP_PKEY_decrypt_init(ctx);
    return init == 1 && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1 &&
           EVP_PKEY_CTX_set_rsa_oaep_md(ctx, md) == 1 && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) == 1;
  });
}

// The thread's PKCS#1 v1.5 context for `op` (kSign or kVerify) over a digest of `hash`.
EVP_PKEY_CTX* Pkcs1Ctx(EVP_PKEY* pkey, RsaCtxOp op, SigHash hash) {
  return internal::ThreadRsaCtx(pkey, op, static_cast<int>(hash), [&](EVP_PKEY_CTX* ctx) {
    const int init = op == RsaCtxOp::kSign ? EVP_PKEY_sign_init(ctx) : EVP_PKEY_verify_init(ctx);
    return init == 1 && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 &&
           EVP_PKEY_CTX_set_signature_md(ctx, SigMd(hash)) == 1;
  });
}

// X9.31 signatures (salt-wire.md 4.2.3) are built here from a raw RSA operation rather than
// with RSA_X931_PADDING: OpenSSL 3's RSA signature provider refuses X9.31 padding without a
// digest (EVP_PKEY_CTX_set_rsa_padding fails with "invalid x931 digest"; it happens to store
// the mode anyway, which is why code that ignores the return value works). Doing the byte
// layout ourselves depends on no such accident. The vectors pin the result byte for byte.

// EM = 0x6A || m || 0xCC, or 0x6B || 0xBB * (j-1) || 0xBA || m || 0xCC with j = k - |m| - 2.
std::string X931Pad(std::string_view message, std::size_t k) {
  const std::size_t j = k - message.size() - 2;
  std::string em;
  em.reserve(k);
  if (j == 0) {
    em.push_back('\x6a');
  } else {
    em.push_back('\x6b');
    em.append(j - 1, '\xbb');
    em.push_back('\xba');
  }
  em.append(message);
  em.push_back('\xcc');
  return em;
}

// Inverse of X931Pad on a k-byte representative; nullopt when the layout is wrong. Like
// OpenSSL's checker, 0x6B must be followed by at least one 0xBB before the 0xBA.
std::optional<std::string> X931Unpad(std::string_view em) {
  if (em.size() < 2 || em.back() != '\xcc') return std::nullopt;
  const std::string_view body = em.substr(0, em.size() - 1);
  if (body.front() == '\x6a') return std::string(body.substr(1));
  if (body.front() != '\x6b') return std::nullopt;
  std::size_t i = 1;
  while (i < body.size() && body[i] == '\xbb') ++i;
  if (i == 1 || i >= body.size() || body[i] != '\xba') return std::nullopt;
  return std::string(body.substr(i + 1));
}

// input^d mod n (private_op) or input^e mod n, with no padding; input and output are k bytes.
// An input not below n is Unauthenticated (it cannot be a signature).
Result<std::string> RawRsa(EVP_PKEY* pkey, bool private_op, std::string_view input) {
  EVP_PKEY_CTX* ctx = internal::ThreadRsaCtx(
      pkey, private_op ? RsaCtxOp::kRawPrivate : RsaCtxOp::kRawPublic, 0, [&](EVP_PKEY_CTX* c) {
        const int init = private_op ? EVP_PKEY_sign_init(c) : EVP_PKEY_verify_recover_init(c);
        return init == 1 && EVP_PKEY_CTX_set_rsa_padding(c, RSA_NO_PADDING) == 1;
      });
  if (ctx == nullptr) return Error::Internal("raw RSA setup: " + TakeOpenSslError());
  std::string out(static_cast<std::size_t>(EVP_PKEY_get_size(pkey)), '\0');
  std::size_t length = out.size();
  const int rc =
      private_op
          ? EVP_PKEY_sign(ctx, MutableBytes(out), &length, Bytes(input), input.size())
          : EVP_PKEY_verify_recover(ctx, MutableBytes(out), &length, Bytes(input), input.size());
  if (rc != 1) {
    internal::DropThreadRsaCtx(ctx);
    const std::string detail = TakeOpenSslError();
    if (private_op) return Error::Internal("raw RSA private operation: " + detail);
    return Error::Unauthenticated("X9.31 signature does not check out: " + detail);
  }
  HALITE_CHECK(length <= out.size()) << "raw RSA output overflow";
  // Left-pad to k bytes (OpenSSL already does; keep the invariant explicit).
  out.resize(length);
  out.insert(0, static_cast<std::size_t>(EVP_PKEY_get_size(pkey)) - length, '\0');
  return out;
}

// n - value as k big-endian bytes, for a k-byte value below n.
Result<std::string> ModulusMinus(EVP_PKEY* pkey, std::string_view value) {
  BIGNUM* raw_n = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &raw_n) != 1) {
    return Error::Internal("RSA modulus: " + TakeOpenSslError());
  }
  Bn n(raw_n);
  Bn v(BN_bin2bn(Bytes(value), static_cast<int>(value.size()), nullptr));
  Bn diff(BN_new());
  HALITE_CHECK(v != nullptr && diff != nullptr) << "BIGNUM allocation failed";
  HALITE_CHECK(BN_sub(diff.get(), n.get(), v.get()) == 1) << "BN_sub failed";
  HALITE_CHECK(!BN_is_negative(diff.get())) << "value above the modulus";
  std::string out(value.size(), '\0');
  HALITE_CHECK(BN_bn2binpad(diff.get(), MutableBytes(out), static_cast<int>(out.size())) ==
               static_cast<int>(out.size()))
      << "BN_bn2binpad failed";
  return out;
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  HALITE_CHECK(length >= 0) << "internal invariant";
  return std::string(data, static_cast<std::size_t>(length));
}

}  // namespace

Result<OaepHash> ParseEncAlgo(std::string_view name) {
  if (name == "OAEP-SHA1") return OaepHash::kSha1;
  if (name == "OAEP-SHA224") return OaepHash::kSha224;
  return Error::InvalidArgument("unsupported enc_algo: " + std::string(name));
}

std::string_view EncAlgoName(OaepHash hash) {
  return hash == OaepHash::kSha224 ? "OAEP-SHA224" : "OAEP-SHA1";
}

Result<SigHash> ParseSigAlgo(std::string_view name) {
  if (name == "PKCS1v15-SHA1") return SigHash::kSha1;
  if (name == "PKCS1v15-SHA224") return SigHash::kSha224;
  return Error::InvalidArgument("unsupported sig_algo: " + std::string(name));
}

std::string_view SigAlgoName(SigHash hash) {
  return hash == SigHash::kSha224 ? "PKCS1v15-SHA224" : "PKCS1v15-SHA1";
}

std::string CleanKey(std::string_view pem) {
  // Python's str.strip() whitespace and str.splitlines() boundaries, ASCII subset.
  constexpr std::string_view kWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f";
  const std::size_t first = pem.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return "";
  const std::size_t last = pem.find_last_not_of(kWhitespace);
  const std::string_view text = pem.substr(first, last - first + 1);
  auto is_break = [](char c) {
    return c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' ||
           c == '\x1e';
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!is_break(c)) {
      out.push_back(c);
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    out.push_back('\n');
  }
  return out;
}

// RsaPublicKey

Result<RsaPublicKey> RsaPublicKey::FromPem(std::string_view pem) {
  HALITE_ASSIGN_OR_RETURN(auto pkey, DecodePem(pem, EVP_PKEY_PUBLIC_KEY, "RSA public key"));
  return RsaPublicKey(std::move(pkey));
}

std::string RsaPublicKey::ToPem() const {
  Bio bio(BIO_new(BIO_s_mem()));
  HALITE_CHECK(bio != nullptr) << "OpenSSL call failed";
  HALITE_CHECK(PEM_write_bio_PUBKEY(bio.get(), pkey_.get()) == 1) << TakeOpenSslError();
  return BioContents(bio.get());
}

Result<std::string> RsaPublicKey::Encrypt(std::string_view plaintext, OaepHash hash) const {
  CountPublic();
  EVP_PKEY_CTX* ctx = OaepCtx(pkey_.get(), RsaCtxOp::kEncrypt, hash);
  if (ctx == nullptr) return Error::Internal("RSA-OAEP setup: " + TakeOpenSslError());
  std::size_t length = size_bytes();
  std::string out(length, '\0');
  if (EVP_PKEY_encrypt(ctx, MutableBytes(out), &length, Bytes(plaintext), plaintext.size()) != 1) {
    internal::DropThreadRsaCtx(ctx);
    return Error::InvalidArgument("RSA-OAEP encrypt (plaintext too long?): " + TakeOpenSslError());
  }
  out.resize(length);
  return out;
}

Status RsaPublicKey::Verify(std::string_view message, std::string_view signature,
                            SigHash hash) const {
  CountPublic();
  if (signature.size() != size_bytes()) {
    return Error::Unauthenticated("RSA signature has the wrong length");
  }
  EVP_PKEY_CTX* ctx = Pkcs1Ctx(pkey_.get(), RsaCtxOp::kVerify, hash);
  if (ctx == nullptr) return Error::Internal("RSA verify setup: " + TakeOpenSslError());
  const std::string digest = MessageDigest(message, hash);
  const int rc =
      EVP_PKEY_verify(ctx, Bytes(signature), signature.size(), Bytes(digest), digest.size());
  if (rc != 1) {
    internal::DropThreadRsaCtx(ctx);
    ERR_clear_error();
    return Error::Unauthenticated("RSA signature does not verify");
  }
  return OkStatus();
}

Result<std::string> RsaPublicKey::X931Recover(std::string_view signature) const {
  CountPublic();
  const std::size_t k = size_bytes();
  if (signature.size() != k) {
    return Error::InvalidArgument("X9.31 signature has the wrong length");
  }
  HALITE_ASSIGN_OR_RETURN(std::string r, RawRsa(pkey_.get(), /*private_op=*/false, signature));
  // X9.31 rule: the signer sent min(s, n - s); a representative ends in nibble 0xC.
  if ((static_cast<unsigned char>(r.back()) & 0x0f) != 0x0c) {
    HALITE_ASSIGN_OR_RETURN(r, ModulusMinus(pkey_.get(), r));
  }
  auto recovered = X931Unpad(r);
  if (!recovered.has_value()) {
    return Error::Unauthenticated("X9.31 signature does not check out");
  }
  return std::move(*recovered);
}

std::size_t RsaPublicKey::size_bytes() const {
  return static_cast<std::size_t>(EVP_PKEY_get_size(pkey_.get()));
}

// RsaPrivateKey

Result<RsaPrivateKey> RsaPrivateKey::Generate(int bits) {
  if (bits < 1024 || bits > kMaxBits) {
    return Error::InvalidArgument("RSA key size out of range: " + std::to_string(bits));
  }
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(bits));
  if (raw == nullptr) return Error::Internal("RSA keygen: " + TakeOpenSslError());
  return RsaPrivateKey(Share(raw));
}

Result<RsaPrivateKey> RsaPrivateKey::FromPem(std::string_view pem) {
  HALITE_ASSIGN_OR_RETURN(auto pkey, DecodePem(pem, EVP_PKEY_KEYPAIR, "RSA private key"));
  return RsaPrivateKey(std::move(pkey));
}

std::string RsaPrivateKey::ToPem() const {
  EncoderCtx ctx(OSSL_ENCODER_CTX_new_for_pkey(pkey_.get(), EVP_PKEY_KEYPAIR, "PEM",
                                               "type-specific", nullptr));
  HALITE_CHECK(ctx != nullptr && OSSL_ENCODER_CTX_get_num_encoders(ctx.get()) > 0)
      << "no PKCS#1 PEM encoder: " << TakeOpenSslError();
  unsigned char* data = nullptr;
  std::size_t length = 0;
  HALITE_CHECK(OSSL_ENCODER_to_data(ctx.get(), &data, &length) == 1) << TakeOpenSslError();
  std::string out(reinterpret_cast<const char*>(data), length);
  OPENSSL_clear_free(data, length);
  return out;
}

RsaPublicKey RsaPrivateKey::PublicKey() const {
  // Round-trip through SPKI DER so the public object holds no private material.
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(pkey_.get(), &der);
  HALITE_CHECK(length > 0) << "i2d_PUBKEY: " << TakeOpenSslError();
  const unsigned char* cursor = der;
  EVP_PKEY* pub = d2i_PUBKEY(nullptr, &cursor, length);
  OPENSSL_free(der);
  HALITE_CHECK(pub != nullptr) << "d2i_PUBKEY: " << TakeOpenSslError();
  return RsaPublicKey(Share(pub));
}

Result<std::string> RsaPrivateKey::Decrypt(std::string_view ciphertext, OaepHash hash) const {
  CountPrivate();
  if (ciphertext.size() != size_bytes()) {
    return Error::InvalidArgument("RSA-OAEP ciphertext has the wrong length");
  }
  EVP_PKEY_CTX* ctx = OaepCtx(pkey_.get(), RsaCtxOp::kDecrypt, hash);
  if (ctx == nullptr) return Error::Internal("RSA-OAEP setup: " + TakeOpenSslError());
  std::size_t length = size_bytes();
  std::string out(length, '\0');
  if (EVP_PKEY_decrypt(ctx, MutableBytes(out), &length, Bytes(ciphertext), ciphertext.size()) !=
      1) {
    internal::DropThreadRsaCtx(ctx);
    ERR_clear_error();
    return Error::Unauthenticated("RSA-OAEP decryption failed");
  }
  out.resize(length);
  return out;
}

Result<std::string> RsaPrivateKey::Sign(std::string_view message, SigHash hash) const {
  CountPrivate();
  EVP_PKEY_CTX* ctx = Pkcs1Ctx(pkey_.get(), RsaCtxOp::kSign, hash);
  if (ctx == nullptr) return Error::Internal("RSA sign setup: " + TakeOpenSslError());
  const std::string digest = MessageDigest(message, hash);
  std::size_t length = size_bytes();
  std::string out(length, '\0');
  if (EVP_PKEY_sign(ctx, MutableBytes(out), &length, Bytes(digest), digest.size()) != 1) {
    internal::DropThreadRsaCtx(ctx);
    return Error::Internal("RSA sign: " + TakeOpenSslError());
  }
  out.resize(length);
  return out;
}

Result<std::string> RsaPrivateKey::X931Sign(std::string_view message) const {
  CountPrivate();
  const std::size_t k = size_bytes();
  if (message.size() + 2 > k) {
    return Error::InvalidArgument("X9.31: message longer than the key allows");
  }
  if (message.size() + 3 == k) {
    // The padding would be 0x6B 0xBA with no 0xBB, which no X9.31 checker accepts.
    return Error::InvalidArgument("X9.31: a message of k - 3 bytes cannot be verified");
  }
  HALITE_ASSIGN_OR_RETURN(const std::string s,
                          RawRsa(pkey_.get(), /*private_op=*/true, X931Pad(message, k)));
  HALITE_ASSIGN_OR_RETURN(const std::string n_minus_s, ModulusMinus(pkey_.get(), s));
  // min(s, n - s); both are k-byte big-endian, so byte order equals numeric order.
  return n_minus_s < s ? n_minus_s : s;
}

std::size_t RsaPrivateKey::size_bytes() const {
  return static_cast<std::size_t>(EVP_PKEY_get_size(pkey_.get()));
}

std::uint64_t RsaContextsMadeOnThisThreadForTest() {
  return internal::ThreadRsaCtxCreatedForTest();
}

RsaOperationCounts RsaOperationsSoFar() {
  return {private_ops.load(std::memory_order_relaxed), public_ops.load(std::memory_order_relaxed)};
}

}  // namespace halite::wire
