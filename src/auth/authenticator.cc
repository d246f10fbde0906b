#include "halite/auth/authenticator.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace halite::auth {

Authenticator::Authenticator(AuthOptions options, std::unique_ptr<TokenStore> tokens)
    : options_(std::move(options)), tokens_(std::move(tokens)) {}

Result<std::unique_ptr<Authenticator>> Authenticator::Open(AuthOptions options) {
  HALITE_ASSIGN_OR_RETURN(auto store, MakeLocalFsTokenStore(options.token_dir));
  return std::make_unique<Authenticator>(std::move(options), std::move(store));
}

Result<Eauth*> Authenticator::Backend(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = backends_.find(name);
  if (it != backends_.end()) return it->second.get();
  HALITE_ASSIGN_OR_RETURN(auto backend, MakeEauth(name, options_));
  Eauth* raw = backend.get();
  backends_.emplace(name, std::move(backend));
  return raw;
}

Result<Token> Authenticator::Login(const std::string& user, const std::string& password,
                                   const std::string& eauth) {
  const Error denied = Error::Unauthenticated("Authentication failure of type \"eauth\" occurred.");
  if (!options_.external_auth.Find(eauth)) {
    spdlog::warn(
        "eauth: the eauth system '{}' is not enabled (external_auth); login of '{}' refused", eauth,
        user);
    return denied;
  }
  auto backend = Backend(eauth);
  if (!backend.ok()) {
    spdlog::error("eauth {}: {}", eauth, backend.error().message);
    return denied;
  }
  auto ok = (*backend)->Authenticate(user, password);
  if (!ok.ok() || !*ok) {
    spdlog::warn("eauth {}: authentication of '{}' failed{}", eauth, user,
                 ok.ok() ? "" : ": " + ok.error().message);
    return denied;
  }
  using namespace std::chrono;
  const double now = duration<double>(system_clock::now().time_since_epoch()).count();
  Token t;
  t.name = user;
  t.eauth = eauth;
  t.start = now;
  t.expire = now + static_cast<double>(options_.token_expire.count());
  t.groups = (*backend)->Groups(user);
  auto minted = tokens_->Mint(std::move(t));
  if (!minted.ok()) {
    spdlog::error("eauth: cannot store a token for '{}': {}", user, minted.error().message);
    return denied;
  }
  spdlog::info("eauth {}: '{}' logged in", eauth, user);
  return minted;
}

Result<Token> Authenticator::CheckToken(std::string_view token) { return tokens_->Get(token); }

Status Authenticator::Logout(std::string_view token) { return tokens_->Remove(token); }

wire::Array Authenticator::AuthList(const Token& token) const {
  const wire::Value* provider = options_.external_auth.Find(token.eauth);
  if (!provider) return {};
  return FillAuthList(*provider, token.name, token.groups, options_.permissive_acl);
}

wire::Array Authenticator::Permissions(const Token& token) const {
  const wire::Value* provider = options_.external_auth.Find(token.eauth);
  if (!provider) return {};
  return LoginPermissions(*provider, token.name, token.groups);
}

}  // namespace halite::auth
