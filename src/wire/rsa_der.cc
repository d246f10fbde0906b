#include "rsa_der.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "halite/wire/encoding.h"

namespace halite::wire::internal {
namespace {

constexpr std::string_view kSpkiBegin = "-----BEGIN PUBLIC KEY-----";
constexpr std::string_view kSpkiEnd = "-----END PUBLIC KEY-----";
constexpr std::string_view kPkcs1Begin = "-----BEGIN RSA PUBLIC KEY-----";
constexpr std::string_view kPkcs1End = "-----END RSA PUBLIC KEY-----";
// AlgorithmIdentifier contents for rsaEncryption: OID 1.2.840.113549.1.1.1, NULL.
constexpr char kRsaEncryptionBytes[] = "\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01\x05\x00";
// (The trailing NUL of the literal is not part of it; the 0x00 before it is.)
constexpr std::string_view kRsaEncryptionAlgorithm(kRsaEncryptionBytes,
                                                   sizeof(kRsaEncryptionBytes) - 1);

// One DER element: tag, minimal definite length, contents; `in` advances past it.
std::optional<std::string_view> Element(std::string_view& in, unsigned char tag) {
  if (in.size() < 2 || static_cast<unsigned char>(in[0]) != tag) return std::nullopt;
  std::size_t length = static_cast<unsigned char>(in[1]);
  std::size_t header = 2;
  if (length == 0x81) {
    if (in.size() < 3) return std::nullopt;
    length = static_cast<unsigned char>(in[2]);
    if (length < 0x80) return std::nullopt;
    header = 3;
  } else if (length == 0x82) {
    if (in.size() < 4) return std::nullopt;
    length = (static_cast<std::size_t>(static_cast<unsigned char>(in[2])) << 8) |
             static_cast<unsigned char>(in[3]);
    if (length < 0x100) return std::nullopt;
    header = 4;
  } else if (length >= 0x80) {
    return std::nullopt;  // longer forms are far beyond any key taken here
  }
  if (in.size() - header < length) return std::nullopt;
  std::string_view contents = in.substr(header, length);
  in.remove_prefix(header + length);
  return contents;
}

// A positive INTEGER in minimal form, as big-endian magnitude bytes.
std::optional<std::string_view> PositiveInteger(std::string_view& in) {
  auto value = Element(in, 0x02);
  if (!value || value->empty()) return std::nullopt;
  const auto first = static_cast<unsigned char>((*value)[0]);
  if (first & 0x80) return std::nullopt;  // negative
  if (first == 0) {
    if (value->size() == 1 || !(static_cast<unsigned char>((*value)[1]) & 0x80)) {
      return std::nullopt;  // zero, or not minimal
    }
    value->remove_prefix(1);
  }
  return value;
}

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
struct BldFree {
  void operator()(OSSL_PARAM_BLD* bld) const { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* params) const { OSSL_PARAM_free(params); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};

EVP_PKEY* FromComponents(std::string_view n, std::string_view e) {
  std::unique_ptr<BIGNUM, BnFree> bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                                                 static_cast<int>(n.size()), nullptr));
  std::unique_ptr<BIGNUM, BnFree> bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                                                 static_cast<int>(e.size()), nullptr));
  std::unique_ptr<OSSL_PARAM_BLD, BldFree> bld(OSSL_PARAM_BLD_new());
  if (!bn_n || !bn_e || !bld ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
    return nullptr;
  }
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr));
  EVP_PKEY* pkey = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &pkey, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return nullptr;
  }
  return pkey;
}

// RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }, nothing after it.
EVP_PKEY* FromPkcs1Der(std::string_view der) {
  auto seq = Element(der, 0x30);
  if (!seq || !der.empty()) return nullptr;
  auto n = PositiveInteger(*seq);
  auto e = n ? PositiveInteger(*seq) : std::nullopt;
  if (!n || !e || !seq->empty()) return nullptr;
  return FromComponents(*n, *e);
}

// SubjectPublicKeyInfo with rsaEncryption (NULL parameters) around an RSAPublicKey.
EVP_PKEY* FromSpkiDer(std::string_view der) {
  auto spki = Element(der, 0x30);
  if (!spki || !der.empty()) return nullptr;
  auto algorithm = Element(*spki, 0x30);
  if (!algorithm || *algorithm != kRsaEncryptionAlgorithm) return nullptr;
  auto bits = Element(*spki, 0x03);
  if (!bits || !spki->empty() || bits->empty() || (*bits)[0] != '\0') return nullptr;
  return FromPkcs1Der(bits->substr(1));
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// The base64 between `begin` and `end` (its line breaks removed) when `text` is exactly such a
// block as PEM writers make it: each marker on a line of its own, "\n" line ends, lines of 64
// base64 characters but the last (1 to 64). Anything else is left to OpenSSL's decoder: the
// fast path must read a subset of what it reads (rsa_pem_fuzz found "...AQAB\nA-----END"
// read here and refused there).
std::optional<std::string> Armoured(std::string_view text, std::string_view begin,
                                    std::string_view end) {
  if (text.size() < begin.size() + end.size() || !text.starts_with(begin) || !text.ends_with(end)) {
    return std::nullopt;
  }
  std::string_view body = text.substr(begin.size(), text.size() - begin.size() - end.size());
  if (body.size() < 3 || body.front() != '\n' || body.back() != '\n') return std::nullopt;
  body = body.substr(1, body.size() - 2);
  std::string base64;
  base64.reserve(body.size());
  while (!body.empty()) {
    const auto nl = body.find('\n');
    const std::string_view line = body.substr(0, nl);
    const bool last = nl == std::string_view::npos;
    if (line.empty() || line.size() > 64 || (!last && line.size() != 64)) return std::nullopt;
    for (const char c : line) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '+' || c == '/' || c == '=';
      if (!ok) return std::nullopt;
    }
    base64.append(line);
    if (last) break;
    body.remove_prefix(nl + 1);
  }
  return base64;
}

}  // namespace

EVP_PKEY* FastRsaPublicKeyFromPem(std::string_view pem) {
  const std::string_view text = Trim(pem);
  std::optional<std::string> base64 = Armoured(text, kSpkiBegin, kSpkiEnd);
  const bool spki = base64.has_value();
  if (!spki) base64 = Armoured(text, kPkcs1Begin, kPkcs1End);
  if (!base64) return nullptr;
  auto der = Base64Decode(*base64);
  if (!der.ok()) return nullptr;
  return spki ? FromSpkiDer(*der) : FromPkcs1Der(*der);
}

}  // namespace halite::wire::internal
