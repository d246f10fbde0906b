#include "rsa_ctx.h"

#include <array>
#include <memory>

#include "halite/common/result.h"

namespace halite::wire::internal {
namespace {

struct PkeyCtxDeleter {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};

struct Slot {
  EVP_PKEY* pkey = nullptr;  // identity only; the context holds the reference
  RsaCtxOp op = RsaCtxOp::kEncrypt;
  int variant = 0;
  std::uint64_t last_used = 0;
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter> ctx;
};

struct ThreadCache {
  std::array<Slot, kRsaCtxSlots> slots;
  std::uint64_t clock = 0;
  std::uint64_t created = 0;
};

ThreadCache& Cache() {
  thread_local ThreadCache cache;
  return cache;
}

}  // namespace

EVP_PKEY_CTX* ThreadRsaCtx(EVP_PKEY* pkey, RsaCtxOp op, int variant,
                           const std::function<bool(EVP_PKEY_CTX*)>& init) {
  ThreadCache& cache = Cache();
  Slot* victim = &cache.slots[0];
  for (Slot& slot : cache.slots) {
    if (slot.ctx != nullptr && slot.pkey == pkey && slot.op == op && slot.variant == variant) {
      slot.last_used = ++cache.clock;
      return slot.ctx.get();
    }
    // An empty slot first, else the least recently used.
    if (victim->ctx != nullptr && (slot.ctx == nullptr || slot.last_used < victim->last_used)) {
      victim = &slot;
    }
  }
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter> ctx(
      EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  HALITE_CHECK(ctx != nullptr) << "EVP_PKEY_CTX_new_from_pkey failed";
  ++cache.created;
  if (!init(ctx.get())) return nullptr;
  victim->ctx = std::move(ctx);
  victim->pkey = pkey;
  victim->op = op;
  victim->variant = variant;
  victim->last_used = ++cache.clock;
  return victim->ctx.get();
}

void DropThreadRsaCtx(EVP_PKEY_CTX* ctx) {
  for (Slot& slot : Cache().slots) {
    if (slot.ctx.get() == ctx) {
      slot.ctx.reset();
      slot.pkey = nullptr;
    }
  }
}

std::uint64_t ThreadRsaCtxCreatedForTest() { return Cache().created; }

}  // namespace halite::wire::internal
