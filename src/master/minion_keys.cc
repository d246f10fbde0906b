#include "halite/master/minion_keys.h"

#include "halite/wire/encoding.h"

namespace halite::master {

Result<MinionKeys::Entry*> MinionKeys::Fresh(std::string_view id) {
  auto stamp = store_.Stamp(keys::KeyState::kAccepted, id);
  if (!stamp.ok()) {
    cache_.erase(std::string(id));
    return std::move(stamp).error();
  }
  auto it = cache_.find(std::string(id));
  if (it != cache_.end() && it->second.stamp == *stamp) return &it->second;
  HALITE_ASSIGN_OR_RETURN(std::string pem, store_.Read(keys::KeyState::kAccepted, id));
  auto key = wire::RsaPublicKey::FromPem(pem);
  if (!key.ok()) {
    return Error::DataLoss("accepted key of '" + std::string(id) +
                           "' does not parse: " + key.error().message);
  }
  auto [pos, inserted] =
      cache_.insert_or_assign(std::string(id), Entry{*stamp, std::move(*key), std::string()});
  return &pos->second;
}

Result<wire::RsaPublicKey> MinionKeys::Get(std::string_view id) {
  std::lock_guard lock(mu_);
  HALITE_ASSIGN_OR_RETURN(Entry * entry, Fresh(id));
  return entry->key;
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

}  // namespace halite::master
