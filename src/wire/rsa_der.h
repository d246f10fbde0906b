// A fast path for RSA public key PEM, for rsa.cc. OpenSSL 3's generic decoder tries every
// decoder it has and costs ~200 us a key here; the PEMs minions send are always one of two
// plain shapes, which this reads in ~10 us: "BEGIN PUBLIC KEY" (SPKI, rsaEncryption) or
// "BEGIN RSA PUBLIC KEY" (PKCS#1), base64 lines only, strict DER. Anything else (headers,
// text around the block, BER, other algorithms, a negative integer) gives nullptr and the
// caller falls back to the decoder, which then decides and words the error. So this path
// accepts a subset of what the decoder accepts, never more.
#pragma once

#include <openssl/evp.h>

#include <string_view>

namespace halite::wire::internal {

// A new public EVP_PKEY (the caller owns it), or nullptr when `pem` is not in a shape read here.
EVP_PKEY* FastRsaPublicKeyFromPem(std::string_view pem);

}  // namespace halite::wire::internal
