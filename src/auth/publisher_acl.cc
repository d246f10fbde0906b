#include "halite/auth/publisher_acl.h"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <vector>

#include "halite/auth/acl.h"
#include "halite/keys/fs.h"
#include "halite/wire/crypticle.h"

namespace halite::auth {

namespace {

// A blacklist entry: a list of expressions, or one string.
bool AnyMatches(const wire::Value* exprs, std::string_view value) {
  if (!exprs) return false;
  if (const std::string* one = exprs->str()) return ExprMatch(value, *one);
  if (!exprs->array()) return false;
  for (const wire::Value& e : *exprs->array()) {
    if (const std::string* text = e.str(); text && ExprMatch(value, *text)) return true;
  }
  return false;
}

std::optional<uid_t> SystemUid(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
    return std::nullopt;
  }
  return found->pw_uid;
}

// Every user of the system's password database (getpwent); called once, at start.
std::vector<std::string> SystemUsers() {
  std::vector<std::string> out;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  setpwent();
  while (getpwent_r(&pw, buf.data(), buf.size(), &found) == 0 && found) {
    out.emplace_back(found->pw_name);
  }
  endpwent();
  return out;
}

// A name usable in a file name: no '/', not "." or "..", nothing empty.
bool SafeUserName(const std::string& user) {
  return !user.empty() && user != "." && user != ".." && user.find('/') == std::string::npos &&
         user.find('\0') == std::string::npos;
}

Result<std::string> UserKey(const std::filesystem::path& cachedir, const std::string& user,
                            std::optional<uid_t> uid) {
  const auto path = cachedir / ("." + user + "_key");
  HALITE_ASSIGN_OR_RETURN(std::string key, LoadOrCreateKeyFile(path, 0400));
  // The user reads it; nobody else but the master's user. Set on every start, so a file
  // another master created (or an older owner) ends up right too.
  if (uid && ::chown(path.c_str(), *uid, static_cast<gid_t>(-1)) != 0) {
    if (errno != EPERM) return keys::ErrnoError(errno, "chown " + path.string());
    // As Salt's mk_key: a master that does not run as root cannot give the file away.
    spdlog::warn(
        "publisher_acl: cannot give {} to {} (the master does not run as root): {} "
        "cannot use halite",
        path.string(), user, user);
  }
  if (::chmod(path.c_str(), 0400) != 0) return keys::ErrnoError(errno, "chmod " + path.string());
  return key;
}

}  // namespace

Result<std::string> LoadOrCreateKeyFile(const std::filesystem::path& path, mode_t mode) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto existing = keys::ReadFile(path);
    if (existing.ok()) {
      if (wire::Crypticle::FromKeyString(*existing).ok()) return *existing;
      spdlog::warn("{} is corrupt; writing a new one", path.string());
      HALITE_RETURN_IF_ERROR(keys::RemoveFile(path));
    } else if (existing.error().code != ErrorCode::kNotFound) {
      return existing.error();
    }
    std::string key = wire::Crypticle::GenerateKeyString();
    HALITE_ASSIGN_OR_RETURN(bool created, keys::CreateFileExclusive(path, key, mode));
    if (created) return key;
  }
  return Error::Unavailable("cannot settle " + path.string());
}

bool UserBlacklisted(const wire::Value& blacklist, std::string_view user) {
  return AnyMatches(blacklist.Find("users"), user);
}

bool FunBlacklisted(const wire::Value& blacklist, const wire::Value& fun) {
  const wire::Value* modules = blacklist.Find("modules");
  if (const std::string* one = fun.str()) return AnyMatches(modules, *one);
  if (!fun.array()) return false;
  for (const wire::Value& f : *fun.array()) {
    if (const std::string* name = f.str(); name && AnyMatches(modules, *name)) return true;
  }
  return false;
}

wire::Array PublisherAuthList(const wire::Value& publisher_acl, std::string_view user) {
  wire::Array out;
  if (!publisher_acl.map()) return out;
  for (const auto& [expr, entries] : *publisher_acl.map()) {
    const std::string* text = expr.str();
    if (!text || !entries.array() || !ExprMatch(user, *text)) continue;
    for (const wire::Value& e : *entries.array()) out.push_back(e);
  }
  return out;
}

Result<std::map<std::string, std::string>> PrepareUserKeys(const AuthOptions& options,
                                                           const std::filesystem::path& cachedir) {
  std::map<std::string, std::string> out;
  const wire::Value& acl = options.publisher_acl;
  if (!acl.map() || acl.map()->empty()) return out;
  std::set<std::string> users;
  for (const auto& [expr, entries] : *acl.map()) {
    if (const std::string* name = expr.str()) users.insert(*name);
  }
  if (options.client_acl_verify) {
    for (const std::string& user : SystemUsers()) {
      if (users.count(user)) continue;
      for (const auto& [expr, entries] : *acl.map()) {
        if (const std::string* text = expr.str(); text && ExprMatch(user, *text)) {
          users.insert(user);
          break;
        }
      }
    }
  }
  for (const std::string& user : users) {
    if (user == "root" || !SafeUserName(user)) continue;
    const std::optional<uid_t> uid = SystemUid(user);
    // An expression (admin|manager_.*) or a user this system does not have: no key, as
    // Salt's mk_key with client_acl_verify.
    if (!uid && options.client_acl_verify) continue;
    HALITE_ASSIGN_OR_RETURN(std::string key, UserKey(cachedir, user, uid));
    spdlog::info("publisher_acl: the key of {} is {}/.{}_key", user, cachedir.string(), user);
    out.emplace(user, std::move(key));
  }
  return out;
}

}  // namespace halite::auth
