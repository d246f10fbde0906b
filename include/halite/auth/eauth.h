// External authentication backends (Salt's salt/auth/*.py) behind one small interface, and
// the master config's eauth settings. Backends: "pam" (libpam, service `auth.pam.service`,
// Salt's default "login"), "file" (Salt's ^filename / ^filetype text / ^hashtype /
// ^field_separator / ^username_field / ^password_field under external_auth.file), and "auto"
// (any password; for tests only, refused unless halite_eauth_auto: True).
// Thread-safe; Authenticate blocks (PAM, files): call from a blocking pool.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::auth {

// The eauth part of the master config (every key as Salt names it).
struct AuthOptions {
  wire::Value external_auth = wire::Value::EmptyMap();  // backend -> user/group% -> auth list
  std::chrono::seconds token_expire{43200};
  std::string token_dir;  // empty: <cachedir>/tokens
  bool permissive_acl = false;
  std::string pam_service = "login";  // auth.pam.service
  bool allow_auto = false;            // halite_eauth_auto (never in production)
  // publisher_acl (user name or expression -> auth list, for local users of the CLI who are
  // not root), publisher_acl_blacklist ({users: [expr], modules: [expr]}, checked on every
  // publish), client_acl_verify (keys only for users who exist); publisher_acl.h.
  wire::Value publisher_acl = wire::Value::EmptyMap();
  wire::Value publisher_acl_blacklist = wire::Value::EmptyMap();
  bool client_acl_verify = true;
};

// Reads the keys above from the master config document (null: defaults). Every problem in one
// Error::InvalidArgument. `cachedir` fills in token_dir.
Result<AuthOptions> ParseAuthOptions(const YAML::Node& root, const std::string& cachedir);

// A YAML value as Salt's loader gives it to the ACL code: maps, lists, strings, and null for
// YAML's null.
wire::Value AclYamlToValue(const YAML::Node& node);

class Eauth {
 public:
  virtual ~Eauth() = default;
  // True when `password` is `user`'s; false when not; an error when the backend failed.
  virtual Result<bool> Authenticate(const std::string& user, const std::string& password) = 0;
  // The user's groups, for "group%" entries (the system's, getgrouplist; empty when the user
  // is not a system user).
  virtual std::vector<std::string> Groups(const std::string& user);
};

// The backend `name` with `options`: Error::InvalidArgument for an unknown backend or bad
// settings, Error::PermissionDenied for "auto" when it is not allowed.
Result<std::unique_ptr<Eauth>> MakeEauth(std::string_view name, const AuthOptions& options);

std::unique_ptr<Eauth> MakePamEauth(std::string service);
struct FileEauthOptions {
  std::string filename;
  std::string filetype = "text";       // only "text"
  std::string hashtype = "plaintext";  // or md5 sha1 sha224 sha256 sha384 sha512
  std::string field_separator = ":";
  int username_field = 1;
  int password_field = 2;
};
Result<std::unique_ptr<Eauth>> MakeFileEauth(const FileEauthOptions& options);
std::unique_ptr<Eauth> MakeAutoEauth();

// The system groups of `user` (getgrouplist), empty when there is no such user.
std::vector<std::string> SystemGroups(const std::string& user);

}  // namespace halite::auth
