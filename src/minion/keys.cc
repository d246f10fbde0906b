#include "halite/minion/keys.h"

#include "files.h"

namespace halite::minion {

Result<MinionKeys> LoadOrCreateKeys(const std::filesystem::path& pki_dir, int bits) {
  HALITE_RETURN_IF_ERROR(internal::EnsureDirectory(pki_dir, 0700));
  const std::filesystem::path pem_path = pki_dir / kMinionPemName;
  const std::filesystem::path pub_path = pki_dir / kMinionPubName;

  std::optional<wire::RsaPrivateKey> key;
  auto pem = internal::ReadWholeFile(pem_path);
  if (pem.ok()) {
    auto parsed = wire::RsaPrivateKey::FromPem(*pem);
    if (!parsed.ok()) {
      return Error::DataLoss(pem_path.string() + ": " + parsed.error().message);
    }
    key.emplace(std::move(parsed).value());
  } else if (pem.error().code == ErrorCode::kNotFound) {
    HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey generated, wire::RsaPrivateKey::Generate(bits));
    HALITE_RETURN_IF_ERROR(internal::WriteFileAtomic(pem_path, generated.ToPem(), 0400));
    // A stale minion.pub of an older key must not survive.
    HALITE_RETURN_IF_ERROR(
        internal::WriteFileAtomic(pub_path, generated.PublicKey().ToPem(), 0644));
    key.emplace(std::move(generated));
  } else {
    return pem.error();
  }

  std::string public_pem = key->PublicKey().ToPem();
  auto pub = internal::ReadWholeFile(pub_path);
  if (!pub.ok()) {
    if (pub.error().code != ErrorCode::kNotFound) return pub.error();
    HALITE_RETURN_IF_ERROR(internal::WriteFileAtomic(pub_path, public_pem, 0644));
  }
  HALITE_ASSIGN_OR_RETURN(std::string tok, key->X931Sign("salt"));
  return MinionKeys{std::move(*key), wire::CleanKey(public_pem), std::move(tok)};
}

Result<std::optional<std::string>> ReadPinnedMasterKey(const std::filesystem::path& pki_dir) {
  auto text = internal::ReadWholeFile(pki_dir / kMasterPubName);
  if (text.ok()) return std::optional<std::string>(std::move(text).value());
  if (text.error().code == ErrorCode::kNotFound) return std::optional<std::string>();
  return text.error();
}

Status WritePinnedMasterKey(const std::filesystem::path& pki_dir, const std::string& pem) {
  return internal::WriteFileAtomic(pki_dir / kMasterPubName, pem, 0644);
}

bool SameKeyText(std::string_view a, std::string_view b) {
  auto strip = [](std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
      if (c != '\n' && c != '\r') out.push_back(c);
    }
    return out;
  };
  return strip(wire::CleanKey(a)) == strip(wire::CleanKey(b));
}

}  // namespace halite::minion
