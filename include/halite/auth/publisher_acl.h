// Salt's publisher_acl for local users of the halite CLI who are not root (salt/acl,
// salt/daemons/masterapi.py access_keys, LoadAuth.authenticate_key / check_authentication):
// the per-user keys the master writes to <cachedir>/.<user>_key, and the publish checks as
// pure functions. The ACL entries are external_auth's (acl.h: function regexes, argument
// conditions, target-scoped entries), checked with AuthCheck.
// Thread-safe (PrepareUserKeys touches files: call it at start, off any event loop).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "halite/auth/eauth.h"
#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::auth {

// salt.acl.PublisherACL.user_is_blacklisted: `user` ExprMatch-es an entry of the blacklist's
// `users` (a list, or one string).
bool UserBlacklisted(const wire::Value& blacklist, std::string_view user);

// cmd_is_blacklisted: a function of `fun` (a name, or a list for a multi-function job)
// ExprMatch-es an entry of the blacklist's `modules`.
bool FunBlacklisted(const wire::Value& blacklist, const wire::Value& fun);

// Salt's get_values_of_matching_keys(publisher_acl, user): the entries of every publisher_acl
// key that ExprMatch-es `user`, in the config's order. Empty: the user may publish nothing.
wire::Array PublisherAuthList(const wire::Value& publisher_acl, std::string_view user);

// Salt's access_keys for publisher_acl: a key for each user publisher_acl names who exists on
// this system (getpwnam), and with client_acl_verify each system user (getpwent) whom a key
// of publisher_acl matches as an expression. Each key is <cachedir>/.<user>_key, kept when
// it is already there and valid (every master of a cluster shares the cachedir: exactly one
// creates it), else created; then owned by the user (a warning instead when the master
// does not run as root) and mode 0400. Without client_acl_verify
// a named user who does not exist still gets a key (owned by the master's user, as Salt does).
// "root" is left out (the master's own .root_key). Returns user -> key.
Result<std::map<std::string, std::string>> PrepareUserKeys(const AuthOptions& options,
                                                           const std::filesystem::path& cachedir);

// A key file a local CLI presents (.root_key, .<user>_key): its key when `path` holds a valid
// one, else a new one created exclusively with `mode` (masters sharing the cachedir race:
// exactly one creates it; a corrupt file is replaced).
Result<std::string> LoadOrCreateKeyFile(const std::filesystem::path& path, mode_t mode);

}  // namespace halite::auth
