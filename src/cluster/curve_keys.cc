#include "halite/cluster/curve_keys.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "halite/keys/fs.h"

namespace halite::cluster {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kZ85KeySize = 40;
constexpr std::size_t kRawKeySize = 32;
constexpr char kSecretFileName[] = "peer_curve.key";

std::string_view Trim(std::string_view text) {
  const char* kSpace = " \t\r\n";
  auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

bool IsZ85Key(std::string_view text) {
  if (text.size() != kZ85KeySize) return false;
  std::array<char, kZ85KeySize + 1> z85{};
  std::memcpy(z85.data(), text.data(), kZ85KeySize);
  std::array<std::uint8_t, kRawKeySize> raw{};
  return zmq_z85_decode(raw.data(), z85.data()) != nullptr;
}

// `<z85 public>\n<z85 secret>\n`; the public key must be the one of the secret.
Result<CurveKeyPair> ParseSecretFile(std::string_view text, const fs::path& path) {
  auto fail = [&](std::string_view why) {
    return Error::DataLoss(path.string() + ": " + std::string(why) +
                           "; remove it to make a new key (peers then need the new "
                           "peers/<id>.curve)");
  };
  auto newline = text.find('\n');
  if (newline == std::string_view::npos) return fail("expected two lines");
  std::string_view public_text = Trim(text.substr(0, newline));
  std::string_view secret_text = Trim(text.substr(newline + 1));
  if (!IsZ85Key(public_text) || !IsZ85Key(secret_text)) return fail("not two z85 CURVE keys");
  std::array<char, kZ85KeySize + 1> derived{};
  std::string secret(secret_text);
  if (zmq_curve_public(derived.data(), secret.c_str()) != 0) {
    return fail(std::string("zmq_curve_public: ") + zmq_strerror(zmq_errno()));
  }
  if (public_text != std::string_view(derived.data(), kZ85KeySize)) {
    return fail("the public key does not belong to the secret key");
  }
  return CurveKeyPair{std::string(public_text), std::move(secret)};
}

Result<CurveKeyPair> NewKeyPair() {
  std::array<char, kZ85KeySize + 1> public_key{};
  std::array<char, kZ85KeySize + 1> secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    return Error::FailedPrecondition(std::string("zmq_curve_keypair: ") +
                                     zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{std::string(public_key.data(), kZ85KeySize),
                      std::string(secret_key.data(), kZ85KeySize)};
}

Result<CurveKeyPair> LoadOrCreateSecret(const fs::path& pki_dir) {
  fs::path path = pki_dir / kSecretFileName;
  auto existing = keys::ReadFile(path);
  if (existing.ok()) return ParseSecretFile(*existing, path);
  if (existing.error().code != ErrorCode::kNotFound) return existing.error();
  HALITE_ASSIGN_OR_RETURN(CurveKeyPair fresh, NewKeyPair());
  HALITE_ASSIGN_OR_RETURN(
      bool created,
      keys::CreateFileExclusive(path, fresh.public_key + "\n" + fresh.secret_key + "\n", 0600));
  if (created) {
    spdlog::info("created the cluster CURVE key pair {}", path.string());
    return fresh;
  }
  // Another process made it first: use theirs.
  HALITE_ASSIGN_OR_RETURN(std::string text, keys::ReadFile(path));
  return ParseSecretFile(text, path);
}

Error ForeignKeyError(const fs::path& path) {
  return Error::FailedPrecondition(path.string() +
                                   " belongs to another key: remove it if this master was "
                                   "rebuilt (or fix this master's id if another master uses it)");
}

}  // namespace

Status CheckCurveSupported() {
  if (zmq_has("curve") == 0) {
    return Error::FailedPrecondition(
        "the linked libzmq has no CURVE security (it was built without libsodium); the "
        "cluster peer channel needs it");
  }
  return OkStatus();
}

bool IsValidPeerId(std::string_view id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string_view::npos &&
         id.find('\0') == std::string_view::npos;
}

fs::path PeerCurveKeyPath(const fs::path& cluster_pki_dir, std::string_view id) {
  return cluster_pki_dir / "peers" / (std::string(id) + ".curve");
}

Result<std::string> ParseCurvePublicKey(std::string_view text) {
  std::string_view key = Trim(text);
  if (!IsZ85Key(key)) return Error::InvalidArgument("not a z85 CURVE public key");
  return std::string(key);
}

bool IsCurveKeyPair(const CurveKeyPair& pair) {
  if (!IsZ85Key(pair.public_key) || !IsZ85Key(pair.secret_key)) return false;
  std::array<char, kZ85KeySize + 1> derived{};
  if (zmq_curve_public(derived.data(), pair.secret_key.c_str()) != 0) return false;
  return pair.public_key == std::string_view(derived.data(), kZ85KeySize);
}

std::string CurveKeyBytes(std::string_view z85) {
  HALITE_CHECK(z85.size() == kZ85KeySize) << "not a z85 key";
  std::array<char, kZ85KeySize + 1> text{};
  std::memcpy(text.data(), z85.data(), kZ85KeySize);
  std::string raw(kRawKeySize, '\0');
  HALITE_CHECK(zmq_z85_decode(reinterpret_cast<std::uint8_t*>(raw.data()), text.data()) != nullptr)
      << "invalid z85 key";
  return raw;
}

Result<CurveKeyPair> LoadOrCreateCurveKeys(const fs::path& pki_dir, const fs::path& cluster_pki_dir,
                                           std::string_view self_id) {
  HALITE_RETURN_IF_ERROR(CheckCurveSupported());
  if (!IsValidPeerId(self_id)) {
    return Error::InvalidArgument("master id '" + std::string(self_id) +
                                  "' cannot name a file in peers/");
  }
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(pki_dir, 0700));
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(cluster_pki_dir / "peers", 0700));
  HALITE_ASSIGN_OR_RETURN(CurveKeyPair pair, LoadOrCreateSecret(pki_dir));

  fs::path published = PeerCurveKeyPath(cluster_pki_dir, self_id);
  auto current = keys::ReadFile(published);
  if (!current.ok()) {
    if (current.error().code != ErrorCode::kNotFound) return current.error();
    HALITE_ASSIGN_OR_RETURN(bool created,
                            keys::CreateFileExclusive(published, pair.public_key + "\n", 0600));
    if (created) {
      spdlog::info("published the cluster CURVE public key as {}", published.string());
      return pair;
    }
    current = keys::ReadFile(published);  // someone raced us: it must be our key too
    if (!current.ok()) return current.error();
  }
  auto parsed = ParseCurvePublicKey(*current);
  if (!parsed.ok() || *parsed != pair.public_key) return ForeignKeyError(published);
  return pair;
}

Result<std::string> ReadPeerCurveKey(const fs::path& cluster_pki_dir, std::string_view id) {
  fs::path path = PeerCurveKeyPath(cluster_pki_dir, id);
  HALITE_ASSIGN_OR_RETURN(std::string text, keys::ReadFile(path));
  auto parsed = ParseCurvePublicKey(text);
  if (!parsed.ok()) return parsed.error().WithContext(path.string());
  return parsed;
}

}  // namespace halite::cluster
