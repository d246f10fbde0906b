// Byte-level helpers shared by the wire code: hex, base64, digests, randomness.
//
// All strings are byte strings. Functions are reentrant and thread-safe; the only state is
// OpenSSL's own (thread-safe) RNG.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "halite/common/result.h"

namespace halite::wire {

// Lowercase hex.
std::string HexEncode(std::string_view bytes);
// Accepts upper- and lowercase digits. InvalidArgument on odd length or a non-hex character.
Result<std::string> HexDecode(std::string_view hex);

// Standard alphabet, '=' padding, no line breaks.
std::string Base64Encode(std::string_view bytes);
// Strict: the length must be a multiple of 4, only the standard alphabet is accepted, and
// '=' may appear only as one or two trailing pad characters. Whitespace is rejected. Nonzero
// unused bits in the last group are ignored, as Python's base64.b64decode does.
// InvalidArgument on any violation.
Result<std::string> Base64Decode(std::string_view text);

// Raw digests (32 and 20 bytes) and their lowercase hex forms.
std::string Sha256(std::string_view bytes);
std::string Sha1(std::string_view bytes);
std::string Sha256Hex(std::string_view bytes);
std::string Sha1Hex(std::string_view bytes);

// n bytes from OpenSSL's CSPRNG. An RNG failure is treated as a bug (HALITE_CHECK).
std::string RandomBytes(std::size_t n);
// 32 lowercase hex characters of fresh randomness (the shape of Python's uuid4().hex, which
// Salt uses for request nonces).
std::string RandomNonce();

// Compares without a data-dependent early exit. Sizes are not secret: different sizes return
// false immediately.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace halite::wire
