// halite-key: list, accept, reject and delete minion keys in the (shared) pki store, with
// salt-key's flags. Works on the files directly, so it needs no running master.
//   -L / -l STATE | -a GLOB | -A | -r GLOB | -R | -d GLOB | -D | -f GLOB | -F  [--yes]
//   [--out json]; GLOB is a glob or a comma-separated list of globs, as salt-key takes.
//   --gen-keys NAME [--gen-keys-dir DIR] [--keysize N]: a key pair in DIR, as salt-key makes it.
// Every accept, reject and delete fires salt-key's salt/key event on the master's bus.
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>

#include "cli_common.h"
#include "halite/client/local_client.h"
#include "halite/client/output.h"
#include "halite/keys/key_admin.h"
#include "halite/keys/master_keys.h"
#include "halite/stores/stores.h"
#include "halite/version.h"
#include "halite/wire/glob.h"

namespace {

using halite::keys::KeyState;

struct StateName {
  KeyState state;
  const char* title;
  const char* json_key;
};
// In the order salt-key's key outputter prints them (sorted by their JSON names).
constexpr StateName kStates[] = {
    {KeyState::kAccepted, "Accepted Keys:", "minions"},
    {KeyState::kDenied, "Denied Keys:", "minions_denied"},
    {KeyState::kPending, "Unaccepted Keys:", "minions_pre"},
    {KeyState::kRejected, "Rejected Keys:", "minions_rejected"},
};
// The order of salt-key's --out json documents.
constexpr KeyState kJsonOrder[] = {KeyState::kAccepted, KeyState::kPending, KeyState::kRejected,
                                   KeyState::kDenied};

const StateName& NameOf(KeyState state) {
  for (const auto& s : kStates) {
    if (s.state == state) return s;
  }
  return kStates[0];
}

// Keys grouped by state: ids, each with a text (its key or fingerprint) or none.
using Grouped = std::map<KeyState, std::vector<std::pair<std::string, std::string>>>;

// salt-key's key outputter: a title per state, then "id" or "id:  text" lines; --out json:
// one document of lists (or maps of id to text) by state.
void PrintGrouped(const Grouped& groups, bool with_text, bool json) {
  if (json) {
    halite::wire::Value doc = halite::wire::Value::EmptyMap();
    for (KeyState state : kJsonOrder) {
      auto it = groups.find(state);
      if (it == groups.end()) continue;
      if (with_text) {
        halite::wire::Map m;  // ids of one state are distinct: appended, not searched
        for (const auto& [id, text] : it->second) m.emplace_back(halite::wire::Value(id), text);
        doc.Set(NameOf(state).json_key, halite::wire::Value(std::move(m)));
      } else {
        halite::wire::Array ids;
        for (const auto& [id, text] : it->second) ids.emplace_back(id);
        doc.Set(NameOf(state).json_key, halite::wire::Value(std::move(ids)));
      }
    }
    std::cout << halite::client::ToPrettyJson(doc) << "\n";
    return;
  }
  // Each entry is "id:  text" and a newline, a key's own final newline kept (so keys stand a
  // blank line apart); the newlines at the very end become one.
  std::string out;
  for (const auto& s : kStates) {
    auto it = groups.find(s.state);
    if (it == groups.end()) continue;
    out += std::string(s.title) + "\n";
    for (const auto& [id, text] : it->second)
      out += with_text ? id + ":  " + text + "\n" : id + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  std::cout << out << "\n";
}

void Usage(std::ostream& os) {
  os << "usage: halite-key [-c CONFIG] ACTION [--yes] [--out json]\n"
        "  -L, --list-all          list every key by state\n"
        "  -l, --list STATE        acc|accepted, un|unaccepted|pre, rej|rejected, den|denied\n"
        "  -a, --accept GLOB       accept pending keys       -A, --accept-all\n"
        "  -r, --reject GLOB       reject pending keys       -R, --reject-all\n"
        "  -d, --delete GLOB       delete keys (any state)   -D, --delete-all\n"
        "  -f, --finger GLOB       print fingerprints        -F, --finger-all\n"
        "  -p, --print GLOB        print public keys         -P, --print-all\n"
        "  --include-rejected      -a also accepts rejected keys\n"
        "  --include-accepted      -r also rejects accepted keys\n"
        "  --include-denied        -a and -r also take denied keys\n"
        "  --include-all           all of the above that apply\n"
        "  -y, --yes               do not ask for confirmation\n"
        "  --rotate-aes-key BOOL   False: deleting or rejecting keys does not rotate the AES\n"
        "                          key (default: the config's rotate_aes_key)\n"
        "  --gen-keys NAME         write the key pair NAME.pem / NAME.pub\n"
        "  --gen-keys-dir DIR      where --gen-keys writes (default: .)\n"
        "  --keysize N             bits of the --gen-keys key, 2048 to 32768 (default 2048)\n"
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

// salt-key's prompt: "[n/Y]" (yes by default), or "[N/y]" for a delete (no by default).
bool Confirm(bool default_yes, bool yes) {
  if (yes) return true;
  std::cout << (default_yes ? "Proceed? [n/Y] " : "Proceed? [N/y] ") << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  if (answer.empty()) return default_yes;
  return answer[0] == 'y' || answer[0] == 'Y';
}

std::optional<KeyState> ParseState(const std::string& s) {
  if (s == "acc" || s == "accepted") return KeyState::kAccepted;
  if (s == "un" || s == "unaccepted" || s == "pre" || s == "pending") return KeyState::kPending;
  if (s == "rej" || s == "rejected") return KeyState::kRejected;
  if (s == "den" || s == "denied") return KeyState::kDenied;
  return std::nullopt;
}

// salt-key's salt/key events ({"result", "act", "id"}). halite-key edits the key files
// itself and the event bus belongs to the master, so the events go to the master over its
// request socket (`_halite_key_event`), which fires them locally and to its cluster peers.
// Without a running master nothing can see them; say so instead of waiting.
void FireKeyEvents(const halite::config::MasterConfig& cfg,
                   const std::vector<std::pair<std::string, std::string>>& changes) {
  if (changes.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(cfg.sock_dir) / "halite_req.ipc", ec)) {
    std::cerr << "halite-key: no salt/key events fired: the master is not running (no "
              << cfg.sock_dir << "/halite_req.ipc)\n";
    return;
  }
  auto client = halite::client::LocalClient::Connect(
      {cfg.sock_dir, cfg.cachedir, std::chrono::milliseconds(3000)});
  halite::wire::Array events;
  for (const auto& [id, act] : changes) {
    events.push_back(halite::wire::Value::MapOf({{"result", true}, {"act", act}, {"id", id}}));
  }
  auto fired =
      client.ok()
          ? (*client)->Call(halite::wire::Value::MapOf(
                {{"cmd", "_halite_key_event"}, {"events", halite::wire::Value(std::move(events))}}))
          : halite::Result<halite::wire::Value>(client.error());
  if (!fired.ok()) {
    std::cerr << "halite-key: no salt/key events fired: " << fired.error().message << "\n";
  }
}

// salt-key --gen-keys: NAME.pem (PKCS#1, 0400) and NAME.pub (SPKI) in `dir`, made if missing,
// and the fingerprint of NAME.pub printed as salt-key prints it;
// an existing NAME.pem is kept, as Salt keeps it. The .pub gets salt-key's mode (0666 less the
// umask) rather than the 0600 halite's own key pairs get.
int GenKeys(const std::string& name, const std::filesystem::path& dir, int keysize) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(dir / (name + ".pem"), ec);
  auto key = halite::keys::LoadOrCreateKeyPair(dir, name, keysize);
  if (!key.ok()) {
    std::cerr << "halite-key: " << key.error().message << "\n";
    return 1;
  }
  if (!existed) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod((dir / (name + ".pub")).c_str(), 0666 & ~mask);
  }
  // What salt-key prints: the new (or kept) public key's fingerprint as {"return": ...}.
  auto pub = halite::keys::ReadPublicKeyText(dir, name);
  auto finger =
      pub.ok() ? halite::keys::Fingerprint(*pub) : halite::Result<std::string>(pub.error());
  if (!finger.ok()) {
    std::cerr << "halite-key: " << finger.error().message << "\n";
    return 1;
  }
  std::cout << "return:\n    " << *finger << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string action;
  std::string target;
  bool yes = false;
  bool json = false;
  bool include_rejected = false, include_accepted = false, include_denied = false;
  std::optional<bool> rotate_aes;
  std::string gen_keys, gen_keys_dir = ".";
  int keysize = 2048;
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
    } else if (a == "--include-rejected") {
      include_rejected = true;
    } else if (a == "--include-accepted") {
      include_accepted = true;
    } else if (a == "--include-denied") {
      include_denied = true;
    } else if (a == "--gen-keys" || a.rfind("--gen-keys=", 0) == 0) {
      gen_keys = a == "--gen-keys" ? need() : a.substr(11);
    } else if (a == "--gen-keys-dir" || a.rfind("--gen-keys-dir=", 0) == 0) {
      gen_keys_dir = a == "--gen-keys-dir" ? need() : a.substr(15);
    } else if (a == "--keysize" || a.rfind("--keysize=", 0) == 0) {
      std::string n = a == "--keysize" ? need() : a.substr(10);
      char* end = nullptr;
      long bits = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0') {
        std::cerr << "halite-key: error: option --keysize: invalid integer value: '" << n << "'\n";
        return 64;
      }
      if (bits < 2048 || bits > 32768) {
        std::cerr << "halite-key: error: The " << (bits < 2048 ? "minimum" : "maximum")
                  << " value for keysize is " << (bits < 2048 ? 2048 : 32768) << "\n";
        return 64;
      }
      keysize = static_cast<int>(bits);
    } else if (a == "--rotate-aes-key" || a.rfind("--rotate-aes-key=", 0) == 0) {
      std::string v = a == "--rotate-aes-key" ? need() : a.substr(17);
      for (auto& ch : v) ch = static_cast<char>(std::tolower(ch));
      if (v != "true" && v != "false") {
        std::cerr << "halite-key: error: --rotate-aes-key takes True or False, not '" << v << "'\n";
        return 64;
      }
      rotate_aes = v == "true";
    } else if (a == "--include-all") {
      include_rejected = include_accepted = include_denied = true;
    } else if (a == "-L" || a == "--list-all" || a == "-A" || a == "--accept-all" || a == "-R" ||
               a == "--reject-all" || a == "-D" || a == "--delete-all" || a == "-F" ||
               a == "--finger-all" || a == "-P" || a == "--print-all") {
      action = a.size() == 2 ? a : std::string("-") + static_cast<char>(std::toupper(a[2]));
    } else if (a == "-l" || a == "--list" || a == "-a" || a == "--accept" || a == "-r" ||
               a == "--reject" || a == "-d" || a == "--delete" || a == "-f" || a == "--finger" ||
               a == "-p" || a == "--print") {
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
  if (!gen_keys.empty()) {
    // Salt's --gen-keys needs no config: the pair goes to --gen-keys-dir.
    if (gen_keys.find('/') != std::string::npos || gen_keys == "." || gen_keys == "..") {
      std::cerr << "halite-key: --gen-keys takes a file name, not a path: '" << gen_keys << "'\n";
      return 64;
    }
    return GenKeys(gen_keys, gen_keys_dir, keysize);
  }
  if (action.empty()) action = "-L";
  auto cfg = halite::apps::LoadConfigOrComplain("halite-key", config_path);
  if (!cfg) return 78;
  if (rotate_aes) cfg->rotate_aes_key = *rotate_aes;
  const std::filesystem::path pki = halite::stores::SharedPkiDir(*cfg);
  if (!ActAsOwnerOf(pki)) return 1;
  auto store = halite::stores::OpenMinionKeys(*cfg);
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
  const std::vector<KeyState> kAll = {KeyState::kAccepted, KeyState::kDenied, KeyState::kPending,
                                      KeyState::kRejected};
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
  // The keys of `states` matching the target, each with `text(state, id)` (empty: ids only);
  // states with no match are left out. `listing` (-L, -l): every key of every state, empty
  // states too, since -l's argument names a state, not keys.
  auto group = [&](const std::vector<KeyState>& states, bool listing,
                   const std::function<std::string(KeyState, const std::string&)>& text) {
    Grouped out;
    for (KeyState state : states) {
      auto ids = listing ? list(state) : matching(state);
      if (ids.empty() && !listing) continue;
      auto& entries = out[state];
      for (const auto& id : ids) entries.emplace_back(id, text ? text(state, id) : "");
    }
    return out;
  };
  auto read_text = [&](bool finger) {
    return [&, finger](KeyState state, const std::string& id) -> std::string {
      auto pem = (*store)->Read(state, id);
      if (!pem.ok()) return pem.error().message;
      if (!finger) return *pem;
      auto f = halite::keys::Fingerprint(*pem);
      return f.ok() ? *f : f.error().message;
    };
  };
  // Deleting or rejecting an accepted key rotates the AES key, as salt-key does, so the
  // removed minion stops reading publishes.
  auto rotate = [&] {
    auto st = halite::keys::WriteDropFile(cfg->cachedir, cfg->id);
    if (!st.ok())
      std::cerr << "halite-key: cannot request an AES rotation: " << st.error().message << "\n";
  };
  int rc = 0;
  std::vector<std::pair<std::string, std::string>> changes;  // (id, salt/key act)
  // salt-key's accept/reject/delete: the keys to act on by state, "The following keys are going
  // to be ...ed:" with them (as JSON with --out json), the prompt, then one line per key.
  // `statuses` names the states searched, for the no-match message.
  auto act = [&](const char* verb, const std::vector<KeyState>& from,
                 const std::vector<std::string>& statuses, bool default_yes,
                 const std::function<halite::Status(KeyState, const std::string&)>& fn) {
    Grouped chosen = group(from, false, nullptr);
    if (chosen.empty()) {
      std::string stat_str = statuses.front();
      if (statuses.size() > 1) {
        stat_str.clear();
        for (std::size_t i = 0; i + 1 < statuses.size(); ++i) {
          stat_str += (i ? ", " : "") + statuses[i];
        }
        stat_str += " or " + statuses.back();
      }
      std::cout << "The key glob '" << (target.empty() ? "*" : target) << "' does not match any "
                << stat_str << " keys.\n";
      rc = 1;
      return chosen;
    }
    std::cout << "The following keys are going to be " << verb << ":\n";
    PrintGrouped(chosen, false, json);
    if (!Confirm(default_yes, yes)) {
      rc = 1;
      return Grouped{};
    }
    Grouped done;
    for (const auto& [state, entries] : chosen) {
      for (const auto& [id, _] : entries) {
        auto st = fn(state, id);
        if (!st.ok()) {
          std::cerr << "halite-key: " << id << ": " << st.error().message << "\n";
          rc = 1;
        } else {
          std::cout << "Key for minion " << id << " " << verb << ".\n";
          done[state].emplace_back(id, "");
          const std::string v = verb;
          changes.emplace_back(id, v == "accepted"   ? "accept"
                                   : v == "rejected" ? "reject"
                                                     : "delete");
        }
      }
    }
    return done;
  };
  if (action == "-L") {
    PrintGrouped(group(kAll, true, nullptr), false, json);
  } else if (action == "-l") {
    auto state = ParseState(target);
    if (!state) {
      std::cerr << "halite-key: unknown key state '" << target << "'\n";
      return 64;
    }
    PrintGrouped(group({*state}, true, nullptr), false, json);
  } else if (action == "-a" || action == "-A") {
    std::vector<KeyState> from = {KeyState::kPending};
    std::vector<std::string> statuses = {"unaccepted"};
    if (include_rejected) from.push_back(KeyState::kRejected), statuses.push_back("rejected");
    if (include_denied) from.push_back(KeyState::kDenied), statuses.push_back("denied");
    act("accepted", from, statuses, true, [&](KeyState state, const std::string& id) {
      return halite::keys::MoveKey(**store, id, state, KeyState::kAccepted);
    });
  } else if (action == "-r" || action == "-R") {
    std::vector<KeyState> from = {KeyState::kPending};
    std::vector<std::string> statuses = {"unaccepted"};
    if (include_accepted) from.push_back(KeyState::kAccepted), statuses.push_back("accepted");
    if (include_denied) from.push_back(KeyState::kDenied), statuses.push_back("denied");
    Grouped done =
        act("rejected", from, statuses, true, [&](KeyState state, const std::string& id) {
          return halite::keys::MoveKey(**store, id, state, KeyState::kRejected);
        });
    if (done.contains(KeyState::kAccepted) && cfg->rotate_aes_key) rotate();
  } else if (action == "-d" || action == "-D") {
    // salt-key names only the unaccepted state (and any --include-*) when nothing matched.
    std::vector<std::string> statuses = {"unaccepted"};
    if (include_accepted) statuses.push_back("accepted");
    if (include_rejected) statuses.push_back("rejected");
    if (include_denied) statuses.push_back("denied");
    // The deleted minions' cached grains, pillar and mine go too (as salt-key's do).
    auto minion_data = halite::stores::OpenMinionData(*cfg, /*feed=*/false);
    if (!minion_data.ok()) {
      std::cerr << "halite-key: " << minion_data.error().ToString() << "\n";
      return 1;
    }
    Grouped done = act("deleted", kAll, statuses, false, [&](KeyState, const std::string& id) {
      if (auto gone = halite::stores::DeleteSessionKey(*cfg, id); !gone.ok()) {
        std::cerr << "halite-key: " << gone.error().ToString() << "\n";
      }
      if (auto gone = (*minion_data)->Remove(id); !gone.ok()) {
        std::cerr << "halite-key: " << gone.error().ToString() << "\n";
      }
      auto st = halite::keys::Delete(**store, id);
      // An id in two states is deleted from both by the first.
      return st.ok() || st.error().code == halite::ErrorCode::kNotFound ? halite::OkStatus() : st;
    });
    if (done.contains(KeyState::kAccepted) && cfg->rotate_aes_key) rotate();
  } else if (action == "-f" || action == "-F") {
    PrintGrouped(group(kAll, false, read_text(true)), true, json);
  } else if (action == "-p" || action == "-P") {
    PrintGrouped(group(kAll, false, read_text(false)), true, json);
  }
  FireKeyEvents(*cfg, changes);
  return rc;
}
