#include "halite/keys/key_store.h"

#include "halite/common/check.h"

namespace halite::keys {

bool ValidMinionId(std::string_view id) {
  if (id.empty() || id.size() > 255) return false;
  if (id == "." || id == "..") return false;
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
  }
  return true;
}

std::string_view KeyStateDir(KeyState state) {
  switch (state) {
    case KeyState::kAccepted:
      return "minions";
    case KeyState::kPending:
      return "minions_pre";
    case KeyState::kRejected:
      return "minions_rejected";
    case KeyState::kDenied:
      return "minions_denied";
  }
  HALITE_CHECK(false) << "bad KeyState " << static_cast<int>(state);
  return {};
}

}  // namespace halite::keys
