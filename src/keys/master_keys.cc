#include "halite/keys/master_keys.h"

#include <utility>

#include "halite/keys/fs.h"
#include "halite/keys/key_store.h"

namespace halite::keys {
namespace {

namespace fs = std::filesystem;

constexpr mode_t kDirMode = 0700;
constexpr mode_t kPrivateKeyMode = 0400;
constexpr mode_t kPublicKeyMode = 0600;  // private like everything the master writes

Result<wire::RsaPrivateKey> ParseStored(const fs::path& pem_path, std::string_view pem) {
  Result<wire::RsaPrivateKey> key = wire::RsaPrivateKey::FromPem(pem);
  if (!key.ok()) {
    return Error::DataLoss("'" + pem_path.string() +
                           "' is not a usable RSA private key: " + key.error().message);
  }
  return key;
}

// Writes {name}.pub when missing. Racing writers derive it from the same private key, so
// whichever rename lands last writes the same bytes.
Status EnsurePublicKey(const fs::path& pub_path, const wire::RsaPrivateKey& key) {
  Result<std::string> existing = ReadFile(pub_path);
  if (existing.ok()) return OkStatus();
  if (existing.error().code != ErrorCode::kNotFound) return std::move(existing).error();
  return WriteFileAtomic(pub_path, key.PublicKey().ToPem(), kPublicKeyMode);
}

}  // namespace

Result<wire::RsaPrivateKey> LoadOrCreateKeyPair(const fs::path& dir, std::string_view name,
                                                int bits) {
  if (!ValidMinionId(name)) {
    return Error::InvalidArgument("invalid key pair name '" + std::string(name) + "'");
  }
  const fs::path pem_path = dir / (std::string(name) + ".pem");
  const fs::path pub_path = dir / (std::string(name) + ".pub");

  Result<std::string> pem = ReadFile(pem_path);
  if (!pem.ok()) {
    if (pem.error().code != ErrorCode::kNotFound) return std::move(pem).error();
    HALITE_RETURN_IF_ERROR(EnsureDir(dir, kDirMode));
    HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey fresh, wire::RsaPrivateKey::Generate(bits));
    HALITE_ASSIGN_OR_RETURN(const bool created,
                            CreateFileExclusive(pem_path, fresh.ToPem(), kPrivateKeyMode));
    if (created) {
      HALITE_RETURN_IF_ERROR(WriteFileAtomic(pub_path, fresh.PublicKey().ToPem(), kPublicKeyMode));
      return fresh;
    }
    // Another process won the race; its file is complete (see CreateFileExclusive).
    pem = ReadFile(pem_path);
    if (!pem.ok()) return std::move(pem).error();
  }
  HALITE_ASSIGN_OR_RETURN(wire::RsaPrivateKey key, ParseStored(pem_path, *pem));
  HALITE_RETURN_IF_ERROR(EnsurePublicKey(pub_path, key));
  return key;
}

Result<std::string> ReadPublicKeyText(const fs::path& dir, std::string_view name) {
  if (!ValidMinionId(name)) {
    return Error::InvalidArgument("invalid key pair name '" + std::string(name) + "'");
  }
  return ReadFile(dir / (std::string(name) + ".pub"));
}

}  // namespace halite::keys
