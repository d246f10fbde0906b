// Accepted minion public keys, parsed once and revalidated with one stat() per use, so the
// hot request path does no PEM parsing and, for a token already seen, no RSA at all.
// Thread-safe; blocks on disk (stat/read): call from worker threads.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "halite/common/result.h"
#include "halite/keys/key_store.h"
#include "halite/wire/rsa.h"

namespace halite::master {

class MinionKeys {
 public:
  explicit MinionKeys(keys::KeyStore& store) : store_(store) {}

  // The accepted key of `id`: NotFound when it is not accepted (deleted keys vanish at once).
  Result<wire::RsaPublicKey> Get(std::string_view id);
  // salt-wire 4.4: X9.31-recovering `tok` with the accepted key must give "salt".
  // Unauthenticated otherwise.
  Status VerifyToken(std::string_view id, std::string_view tok);

 private:
  struct Entry {
    keys::FileStamp stamp;
    wire::RsaPublicKey key;
    std::string verified_tok;  // empty until a token verified against this key
  };
  // Caller holds mu_ (GUARDED_BY applies to data, not functions: clang ignored it here).
  Result<Entry*> Fresh(std::string_view id);

  keys::KeyStore& store_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_ HALITE_GUARDED_BY(mu_);
};

}  // namespace halite::master
