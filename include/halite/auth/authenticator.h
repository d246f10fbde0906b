// Salt's LoadAuth for eauth logins and tokens: mk_token (the backend must be configured under
// external_auth and accept the password), get_tok (an unexpired token from the store), and the
// auth list of a token's user. Thread-safe; blocks (PAM, disk): call from a blocking pool.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "halite/auth/acl.h"
#include "halite/auth/eauth.h"
#include "halite/auth/token_store.h"
#include "halite/common/check.h"

namespace halite::auth {

class Authenticator {
 public:
  Authenticator(AuthOptions options, std::unique_ptr<TokenStore> tokens);
  // Opens the localfs token store in options.token_dir.
  static Result<std::unique_ptr<Authenticator>> Open(AuthOptions options);

  // A new token for `user`, or Error::Unauthenticated (unknown or unconfigured backend, wrong
  // password, backend failure; the reason is logged, never told to the client).
  Result<Token> Login(const std::string& user, const std::string& password,
                      const std::string& eauth);
  // The unexpired token `token`, or Error::Unauthenticated.
  Result<Token> CheckToken(std::string_view token);
  Status Logout(std::string_view token);
  // Salt's fill_auth_list for the token's user in its backend's section.
  wire::Array AuthList(const Token& token) const;
  // /login's "perms" (sum_permissions, sorted).
  wire::Array Permissions(const Token& token) const;
  const AuthOptions& options() const { return options_; }

 private:
  Result<Eauth*> Backend(const std::string& name);

  const AuthOptions options_;
  std::unique_ptr<TokenStore> tokens_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Eauth>> backends_ HALITE_GUARDED_BY(mu_);
};

}  // namespace halite::auth
