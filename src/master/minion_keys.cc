#include "halite/master/minion_keys.h"

#include <optional>

#include "halite/common/check.h"
#include "halite/wire/encoding.h"

namespace halite::master {

MinionKeys::MinionKeys(keys::KeyStore& store, std::size_t capacity, std::size_t max_unconfirmed)
    : store_(store), capacity_(capacity), max_unconfirmed_(max_unconfirmed) {
  HALITE_CHECK(capacity_ > 0) << "MinionKeys needs room for one key";
}

void MinionKeys::Touch(Entry& entry) { lru_.splice(lru_.begin(), lru_, entry.lru); }

void MinionKeys::Erase(std::string_view id) {
  auto it = cache_.find(std::string(id));
  if (it == cache_.end()) return;
  if (it->second.stamp == keys::FileStamp{}) --unconfirmed_;
  lru_.erase(it->second.lru);
  cache_.erase(it);
}

MinionKeys::Entry* MinionKeys::Remember(std::string_view id, keys::FileStamp stamp,
                                        std::string text, wire::RsaPublicKey key) {
  const bool unconfirmed = stamp == keys::FileStamp{};
  auto it = cache_.find(std::string(id));
  if (it != cache_.end()) {
    unconfirmed_ += unconfirmed;
    unconfirmed_ -= it->second.stamp == keys::FileStamp{};
    it->second.stamp = stamp;
    it->second.text = std::move(text);
    it->second.key = std::move(key);
    it->second.verified_tok.clear();
    Touch(it->second);
    return &it->second;
  }
  while (cache_.size() >= capacity_) Erase(std::string(lru_.back()));
  unconfirmed_ += unconfirmed;
  lru_.emplace_front(id);
  auto [pos, inserted] = cache_.emplace(
      std::string(id), Entry{stamp, std::move(text), std::move(key), std::string(), lru_.begin()});
  return &pos->second;
}

Result<MinionKeys::Entry*> MinionKeys::Fresh(std::string_view id) {
  auto stamp = store_.Stamp(keys::KeyState::kAccepted, id);
  if (!stamp.ok()) {
    Erase(id);
    return std::move(stamp).error();
  }
  auto it = cache_.find(std::string(id));
  if (it != cache_.end() && it->second.stamp == *stamp) {
    Touch(it->second);
    return &it->second;
  }
  auto pem = store_.Read(keys::KeyState::kAccepted, id);
  if (!pem.ok()) {
    Erase(id);
    return std::move(pem).error();
  }
  if (it != cache_.end() && it->second.text == *pem) {
    // Same text in a new file (or the file Parse's caller wrote): the parsed key stands, but a
    // token verified against the old file is checked again.
    if (it->second.stamp != keys::FileStamp{}) {
      it->second.verified_tok.clear();
    } else {
      --unconfirmed_;
    }
    it->second.stamp = *stamp;
    Touch(it->second);
    return &it->second;
  }
  ++parses_;
  auto key = wire::RsaPublicKey::FromPem(*pem);
  if (!key.ok()) {
    Erase(id);
    return Error::DataLoss("accepted key of '" + std::string(id) +
                           "' does not parse: " + key.error().message);
  }
  return Remember(id, *stamp, std::move(*pem), std::move(*key));
}

Result<wire::RsaPublicKey> MinionKeys::Get(std::string_view id) {
  std::lock_guard lock(mu_);
  HALITE_ASSIGN_OR_RETURN(Entry * entry, Fresh(id));
  return entry->key;
}

Result<MinionKeys::Accepted> MinionKeys::Lookup(std::string_view id) {
  std::lock_guard lock(mu_);
  HALITE_ASSIGN_OR_RETURN(Entry * entry, Fresh(id));
  return Accepted{entry->key, entry->stamp};
}

Result<wire::RsaPublicKey> MinionKeys::Parse(std::string_view id, std::string_view pem) {
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(std::string(id));
    if (it != cache_.end() && it->second.text == pem) {
      Touch(it->second);
      return it->second.key;
    }
    ++parses_;
  }
  // Parsed outside the lock so that workers parse in parallel.
  HALITE_ASSIGN_OR_RETURN(wire::RsaPublicKey key, wire::RsaPublicKey::FromPem(pem));
  std::lock_guard lock(mu_);
  auto it = cache_.find(std::string(id));
  // A key the file was seen holding is not displaced by text nobody has written yet.
  const bool room = unconfirmed_ < max_unconfirmed_;
  if ((it == cache_.end() && room) ||
      (it != cache_.end() && it->second.stamp == keys::FileStamp{})) {
    Remember(id, keys::FileStamp{}, std::string(pem), key);
  }
  return key;
}

Status MinionKeys::VerifyToken(std::string_view id, std::string_view tok) {
  std::optional<wire::RsaPublicKey> key;
  keys::FileStamp stamp;
  {
    std::lock_guard lock(mu_);
    HALITE_ASSIGN_OR_RETURN(Entry * entry, Fresh(id));
    if (!entry->verified_tok.empty() && wire::ConstantTimeEquals(entry->verified_tok, tok)) {
      return OkStatus();
    }
    key = entry->key;
    stamp = entry->stamp;
  }
  // The RSA operation runs outside the lock so that workers verify in parallel.
  auto recovered = key->X931Recover(tok);
  if (!recovered.ok() || *recovered != "salt") {
    return Error::Unauthenticated("token of '" + std::string(id) + "' does not verify");
  }
  std::lock_guard lock(mu_);
  auto it = cache_.find(std::string(id));
  if (it != cache_.end() && it->second.stamp == stamp) it->second.verified_tok = std::string(tok);
  return OkStatus();
}

std::size_t MinionKeys::SizeForTest() {
  std::lock_guard lock(mu_);
  return cache_.size();
}

std::size_t MinionKeys::UnconfirmedForTest() {
  std::lock_guard lock(mu_);
  return unconfirmed_;
}

std::size_t MinionKeys::ParsesForTest() {
  std::lock_guard lock(mu_);
  return parses_;
}

}  // namespace halite::master
