#include "halite/keys/key_admin.h"

#include <sys/stat.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"

namespace halite::keys {
namespace {

constexpr std::string_view kDropFile = ".dfn";
constexpr mode_t kDropFileMode = 0400;

// Moves the key of `id` from `from` to `to`: written first, so a crash in between leaves the
// key in both places rather than in neither (the _auth state machine checks accepted and
// rejected before pending).
Status Move(KeyStore& store, std::string_view id, KeyState from, KeyState to) {
  Result<std::string> pem = store.Read(from, id);
  if (!pem.ok()) {
    if (pem.error().code == ErrorCode::kNotFound) {
      return Error::NotFound("no " + std::string(KeyStateDir(from)) + " key for '" +
                             std::string(id) + "'");
    }
    return std::move(pem).error();
  }
  HALITE_RETURN_IF_ERROR(store.Write(to, id, *pem));
  Status removed = store.Remove(from, id);
  if (!removed.ok() && removed.error().code != ErrorCode::kNotFound) return removed;
  return OkStatus();
}

}  // namespace

Status MoveKey(KeyStore& store, std::string_view id, KeyState from, KeyState to) {
  return Move(store, id, from, to);
}

Status Accept(KeyStore& store, std::string_view id) {
  return Move(store, id, KeyState::kPending, KeyState::kAccepted);
}

Status Reject(KeyStore& store, std::string_view id) {
  return Move(store, id, KeyState::kPending, KeyState::kRejected);
}

Status Delete(KeyStore& store, std::string_view id) {
  bool removed_any = false;
  for (KeyState state :
       {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied}) {
    Status removed = store.Remove(state, id);
    if (removed.ok()) {
      removed_any = true;
    } else if (removed.error().code != ErrorCode::kNotFound) {
      return removed;
    }
  }
  if (!removed_any) return Error::NotFound("no key for '" + std::string(id) + "'");
  return OkStatus();
}

Result<std::string> Fingerprint(std::string_view pem) {
  // Python: [x for x in open(path, "rb").readlines() if x.strip()][1:-1], joined.
  constexpr std::string_view kBytesWhitespace = " \t\n\r\v\f";
  std::vector<std::string_view> lines;
  std::string_view rest = pem;
  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    const std::size_t length = newline == std::string_view::npos ? rest.size() : newline + 1;
    const std::string_view line = rest.substr(0, length);
    rest.remove_prefix(length);
    if (line.find_first_not_of(kBytesWhitespace) != std::string_view::npos) lines.push_back(line);
  }
  if (lines.size() < 3) return Error::InvalidArgument("not a PEM block: too few lines");
  std::string body;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) body.append(lines[i]);
  const std::string hex = wire::Sha256Hex(body);
  std::string finger;
  finger.reserve(hex.size() * 3 / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    if (i != 0) finger.push_back(':');
    finger.append(hex, i, 2);
  }
  return finger;
}

Status WriteDropFile(const std::filesystem::path& cachedir, std::string_view master_id) {
  const std::filesystem::path dfn = cachedir / kDropFile;
  struct stat st {};
  if (::stat(dfn.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return OkStatus();  // requested
  return WriteFileAtomic(dfn, master_id, kDropFileMode);
}

Result<bool> ConsumeDropFile(const std::filesystem::path& cachedir, std::string_view master_id) {
  const std::filesystem::path dfn = cachedir / kDropFile;
  struct stat st {};
  if (::stat(dfn.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoError(errno, "stat '" + dfn.string() + "'");
  }
  if (st.st_mode != (S_IFREG | kDropFileMode)) return false;  // Salt: "incorrect permissions"
  Result<std::string> content = ReadFile(dfn);
  if (!content.ok()) {
    if (content.error().code == ErrorCode::kNotFound) return false;
    return std::move(content).error();
  }
  if (*content != master_id) return false;
  Status removed = RemoveFile(dfn);
  if (removed.ok()) return true;
  if (removed.error().code == ErrorCode::kNotFound) return false;  // another consumer won
  return std::move(removed).error();
}

}  // namespace halite::keys
