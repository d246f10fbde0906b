// Accepted minion public keys, parsed once and revalidated with one stat() per use, so the
// hot request path does no PEM parsing (OpenSSL 3's decoder costs ~90 us a key) and, for a
// token already seen, no RSA at all.
//
// An entry is trusted while the key file's stamp (device, inode, size, mtime) is the one it
// was read at. When the stamp changes the file is read again, and parsed again only if its
// text changed: the parsed key is a function of the text alone, so a sign-in that parsed the
// `pub` it is about to write (Parse) hands the result to the next Get with no second parse.
// A deleted or unreadable key drops its entry at once. At most `capacity` entries are kept;
// the least recently used goes first (a fleet larger than the bound only parses more).
//
// Thread-safe; blocks on disk (stat/read): call from worker threads.
#pragma once

#include <cstddef>
#include <list>
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
  static constexpr std::size_t kDefaultCapacity = 200'000;
  // Entries Parse made for text no key file was seen holding yet (sign-ins in flight): few at
  // any time, and strangers sending keys for made-up ids must not fill the cache with them.
  static constexpr std::size_t kDefaultUnconfirmed = 1024;

  explicit MinionKeys(keys::KeyStore& store, std::size_t capacity = kDefaultCapacity,
                      std::size_t max_unconfirmed = kDefaultUnconfirmed);

  struct Accepted {
    wire::RsaPublicKey key;
    keys::FileStamp stamp;  // of the key file the key was read from
  };
  // The accepted key of `id`: NotFound when it is not accepted (deleted keys vanish at once).
  Result<wire::RsaPublicKey> Get(std::string_view id);
  // The same with the stamp of its file (session keys are tied to it).
  Result<Accepted> Lookup(std::string_view id);
  // `pem` parsed as an RSA public key for `id`: the cached key when `pem` is the text cached
  // for `id`, else a fresh parse that is remembered (without a stamp: the next Get still reads
  // the file and uses the key only if the file holds this text), while fewer than
  // `max_unconfirmed` such entries exist. Errors as RsaPublicKey::FromPem.
  Result<wire::RsaPublicKey> Parse(std::string_view id, std::string_view pem);
  // salt-wire 4.4: X9.31-recovering `tok` with the accepted key must give "salt".
  // Unauthenticated otherwise.
  Status VerifyToken(std::string_view id, std::string_view tok);

  std::size_t SizeForTest();
  // PEM texts parsed since construction.
  std::size_t ParsesForTest();
  std::size_t UnconfirmedForTest();

 private:
  struct Entry {
    keys::FileStamp stamp;  // all zero until the file was seen holding `text`
    std::string text;
    wire::RsaPublicKey key;
    std::string verified_tok;  // empty until a token verified against this key
    std::list<std::string>::iterator lru;
  };
  // Caller holds mu_ (GUARDED_BY applies to data, not functions: clang ignored it here).
  Result<Entry*> Fresh(std::string_view id);
  Entry* Remember(std::string_view id, keys::FileStamp stamp, std::string text,
                  wire::RsaPublicKey key);
  void Touch(Entry& entry);
  void Erase(std::string_view id);

  keys::KeyStore& store_;
  const std::size_t capacity_;
  const std::size_t max_unconfirmed_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_ HALITE_GUARDED_BY(mu_);
  std::list<std::string> lru_ HALITE_GUARDED_BY(mu_);  // most recent first
  std::size_t parses_ HALITE_GUARDED_BY(mu_) = 0;
  std::size_t unconfirmed_ HALITE_GUARDED_BY(mu_) = 0;  // entries with an all-zero stamp
};

}  // namespace halite::master
