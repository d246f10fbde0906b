// Per-thread EVP_PKEY_CTXs for rsa.cc. OpenSSL 3 makes a context per operation expensive (a
// provider fetch, a key export check and several locked lookups each time, ~15 us against a
// 16 us public operation), while one context, once initialised, may run the same operation
// any number of times. Each thread keeps a few initialised contexts, one per (key, operation,
// hash): a context is not thread-safe, so it never leaves its thread.
//
// A cached context holds a reference on its EVP_PKEY (EVP_PKEY_CTX_new_from_pkey takes one),
// so a key's address cannot be reused by another key while a context for it is cached, and a
// minion key dropped by every cache stays alive until its context is evicted: at most
// kRsaCtxSlots keys per thread.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace halite::wire::internal {

enum class RsaCtxOp : std::uint8_t {
  kEncrypt,
  kDecrypt,
  kSign,
  kVerify,
  kRawPrivate,
  kRawPublic,
};

inline constexpr std::size_t kRsaCtxSlots = 8;

// The calling thread's context for `op` with `variant` (the hash) on `pkey`, made and set up
// with `init` on first use (init returns false when OpenSSL refuses; then nullptr is
// returned and nothing is cached). The pointer is valid until this thread's next call.
EVP_PKEY_CTX* ThreadRsaCtx(EVP_PKEY* pkey, RsaCtxOp op, int variant,
                           const std::function<bool(EVP_PKEY_CTX*)>& init);
// Forgets `ctx` (after an operation on it failed, so that no state of the failure lingers).
void DropThreadRsaCtx(EVP_PKEY_CTX* ctx);
// Contexts made on this thread since it started (for tests: a reused context makes none).
std::uint64_t ThreadRsaCtxCreatedForTest();

}  // namespace halite::wire::internal
