// halite-key: list, accept, reject and delete minion keys in the (shared) pki store, with
// salt-key's flags. Works on the files directly, so it needs no running master.
//   -L / -l STATE | -a GLOB | -A | -r GLOB | -R | -d GLOB | -D | -f GLOB | -F  [--yes]
//   [--out json]; GLOB is a glob or a comma-separated list of globs, as salt-key takes.
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli_common.h"
#include "halite/client/output.h"
#include "halite/keys/fs_key_store.h"
#include "halite/keys/key_admin.h"
#include "halite/version.h"
#include "halite/wire/glob.h"

namespace {

using halite::keys::KeyState;

struct StateName {
  KeyState state;
  const char* title;
  const char* json_key;
};
constexpr StateName kStates[] = {
    {KeyState::kAccepted, "Accepted Keys:", "minions"},
    {KeyState::kDenied, "Denied Keys:", "minions_denied"},
    {KeyState::kPending, "Unaccepted Keys:", "minions_pre"},
    {KeyState::kRejected, "Rejected Keys:", "minions_rejected"},
};

void Usage(std::ostream& os) {
  os << "usage: halite-key [-c CONFIG] ACTION [--yes] [--out json]\n"
        "  -L, --list-all          list every key by state\n"
        "  -l, --list STATE        acc|accepted, un|unaccepted|pre, rej|rejected, den|denied\n"
        "  -a, --accept GLOB       accept pending keys       -A, --accept-all\n"
        "  -r, --reject GLOB       reject pending keys       -R, --reject-all\n"
        "  -d, --delete GLOB       delete keys (any state)   -D, --delete-all\n"
        "  -f, --finger GLOB       print fingerprints        -F, --finger-all\n"
        "  -y, --yes               do not ask for confirmation\n"
        "Run as root on a key directory another user owns (the packaged master runs as\n"
        "halite), halite-key acts as that user, so the master can read the keys it writes.\n";
}

// Run as root on a key directory that another user owns (the packaged master runs as
// `halite`), acts as that user: a key file root wrote would be unreadable to the master.
bool ActAsOwnerOf(const std::filesystem::path& dir) {
  struct stat st {};
  if (::geteuid() != 0 || ::stat(dir.c_str(), &st) != 0 || st.st_uid == 0) return true;
  if (::setgroups(0, nullptr) != 0 || ::setgid(st.st_gid) != 0 || ::setuid(st.st_uid) != 0) {
    std::cerr << "halite-key: cannot act as the owner of " << dir << ": " << std::strerror(errno)
              << "\n";
    return false;
  }
  return true;
}

bool Confirm(const std::string& question, bool yes) {
  if (yes) return true;
  std::cout << question << " [n/Y] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer.empty() || answer[0] == 'y' || answer[0] == 'Y';
}

std::optional<KeyState> ParseState(const std::string& s) {
  if (s == "acc" || s == "accepted") return KeyState::kAccepted;
  if (s == "un" || s == "unaccepted" || s == "pre" || s == "pending") return KeyState::kPending;
  if (s == "rej" || s == "rejected") return KeyState::kRejected;
  if (s == "den" || s == "denied") return KeyState::kDenied;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string action;
  std::string target;
  bool yes = false;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "halite-key: " << a << " needs an argument\n";
        std::exit(64);
      }
      return argv[++i];
    };
    if (a == "-c" || a == "--config") {
      config_path = need();
    } else if (a == "-y" || a == "--yes") {
      yes = true;
    } else if (a == "--out" || a == "--output") {
      json = need() == "json";
    } else if (a == "--out=json") {
      json = true;
    } else if (a == "-L" || a == "--list-all" || a == "-A" || a == "--accept-all" || a == "-R" ||
               a == "--reject-all" || a == "-D" || a == "--delete-all" || a == "-F" ||
               a == "--finger-all") {
      action = a.size() == 2 ? a : std::string("-") + static_cast<char>(std::toupper(a[2]));
    } else if (a == "-l" || a == "--list" || a == "-a" || a == "--accept" || a == "-r" ||
               a == "--reject" || a == "-d" || a == "--delete" || a == "-f" || a == "--finger") {
      action = a.size() == 2 ? a : std::string("-") + a[2];
      target = need();
    } else if (a == "--version") {
      std::cout << "halite-key " << halite::kVersion << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      Usage(std::cout);
      return 0;
    } else {
      std::cerr << "halite-key: unknown argument " << a << "\n";
      Usage(std::cerr);
      return 64;
    }
  }
  if (action.empty()) action = "-L";
  auto cfg = halite::apps::LoadConfigOrComplain("halite-key", config_path);
  if (!cfg) return 78;
  std::filesystem::path pki =
      cfg->cluster_id.empty() || cfg->cluster_pki_dir.empty() ? cfg->pki_dir : cfg->cluster_pki_dir;
  if (!ActAsOwnerOf(pki)) return 1;
  auto store = halite::keys::FsKeyStore::Open(pki);
  if (!store.ok()) {
    std::cerr << "halite-key: " << store.error().message << "\n";
    return 1;
  }
  auto list = [&](KeyState state) -> std::vector<std::string> {
    auto ids = (*store)->List(state);
    if (!ids.ok()) {
      std::cerr << "halite-key: " << ids.error().message << "\n";
      std::exit(1);
    }
    return *ids;
  };
  auto print_states = [&](const std::vector<KeyState>& states) {
    if (json) {
      halite::wire::Value doc = halite::wire::Value::EmptyMap();
      for (const auto& s : kStates) {
        if (std::find(states.begin(), states.end(), s.state) == states.end()) continue;
        halite::wire::Array ids;
        for (const auto& id : list(s.state)) ids.emplace_back(id);
        doc.Set(s.json_key, halite::wire::Value(std::move(ids)));
      }
      std::cout << halite::client::ToPrettyJson(doc) << "\n";
      return;
    }
    for (const auto& s : kStates) {
      if (std::find(states.begin(), states.end(), s.state) == states.end()) continue;
      std::cout << s.title << "\n";
      for (const auto& id : list(s.state)) std::cout << id << "\n";
    }
  };
  // Deleting or rejecting an accepted key rotates the AES key, as salt-key does, so the
  // removed minion stops reading publishes.
  auto rotate = [&] {
    auto st = halite::keys::WriteDropFile(cfg->cachedir, cfg->id);
    if (!st.ok())
      std::cerr << "halite-key: cannot request an AES rotation: " << st.error().message << "\n";
  };
  int rc = 0;
  auto act = [&](const char* verb, KeyState from, const std::vector<std::string>& ids, auto fn) {
    if (ids.empty()) {
      std::cout << "The key glob '" << (target.empty() ? "*" : target) << "' does not match any "
                << (from == KeyState::kPending ? "unaccepted" : "") << " keys.\n";
      rc = 1;
      return;
    }
    std::cout << "The following keys are going to be " << verb << ":\n";
    for (const auto& id : ids) std::cout << id << "\n";
    if (!Confirm("Proceed?", yes)) {
      rc = 1;
      return;
    }
    for (const auto& id : ids) {
      auto st = fn(id);
      if (!st.ok()) {
        std::cerr << "halite-key: " << id << ": " << st.error().message << "\n";
        rc = 1;
      } else {
        std::cout << "Key for minion " << id << " " << verb << ".\n";
      }
    }
  };
  // salt-key's name_match: the target is a glob, or a comma-separated list of globs.
  std::vector<std::string> globs;
  for (std::size_t start = 0; start <= target.size();) {
    std::size_t comma = std::min(target.find(',', start), target.size());
    globs.push_back(target.substr(start, comma - start));
    start = comma + 1;
  }
  auto matching = [&](KeyState state) {
    std::vector<std::string> out;
    for (const auto& id : list(state)) {
      bool hit = target.empty();
      for (const auto& g : globs) hit = hit || halite::wire::GlobMatch(g, id);
      if (hit) out.push_back(id);
    }
    return out;
  };
  auto fingerprints = [&](const std::vector<KeyState>& states) {
    for (const auto& s : kStates) {
      if (std::find(states.begin(), states.end(), s.state) == states.end()) continue;
      auto ids = matching(s.state);
      if (ids.empty()) continue;
      std::cout << s.title << "\n";
      for (const auto& id : ids) {
        auto pem = (*store)->Read(s.state, id);
        auto finger =
            pem.ok() ? halite::keys::Fingerprint(*pem) : halite::Result<std::string>(pem.error());
        std::cout << id << ":  " << (finger.ok() ? *finger : finger.error().message) << "\n";
      }
    }
  };
  if (action == "-L") {
    print_states({KeyState::kAccepted, KeyState::kDenied, KeyState::kPending, KeyState::kRejected});
  } else if (action == "-l") {
    auto state = ParseState(target);
    if (!state) {
      std::cerr << "halite-key: unknown key state '" << target << "'\n";
      return 64;
    }
    print_states({*state});
  } else if (action == "-a" || action == "-A") {
    act("accepted", KeyState::kPending, matching(KeyState::kPending),
        [&](const std::string& id) { return halite::keys::Accept(**store, id); });
  } else if (action == "-r" || action == "-R") {
    act("rejected", KeyState::kPending, matching(KeyState::kPending),
        [&](const std::string& id) { return halite::keys::Reject(**store, id); });
  } else if (action == "-d" || action == "-D") {
    std::vector<std::string> ids;
    for (KeyState s :
         {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected, KeyState::kDenied}) {
      for (const auto& id : matching(s)) {
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
      }
    }
    bool had_accepted = !matching(KeyState::kAccepted).empty();
    act("deleted", KeyState::kAccepted, ids, [&](const std::string& id) {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(cfg->cachedir) / "sessions" / id, ec);
      std::filesystem::remove_all(std::filesystem::path(cfg->cachedir) / "minions" / id, ec);
      return halite::keys::Delete(**store, id);
    });
    if (had_accepted && rc == 0 && cfg->rotate_aes_key) rotate();
  } else if (action == "-f" || action == "-F") {
    fingerprints({KeyState::kAccepted, KeyState::kDenied, KeyState::kPending, KeyState::kRejected});
  }
  return rc;
}
