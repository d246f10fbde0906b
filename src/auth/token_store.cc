#include "halite/auth/token_store.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"

namespace halite::auth {

namespace {

double Now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

class LocalFsTokenStore : public TokenStore {
 public:
  explicit LocalFsTokenStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // TokenStore:
  Result<Token> Mint(Token data) override {
    for (int attempt = 0; attempt < 8; ++attempt) {
      data.token = wire::Sha256Hex(wire::RandomBytes(512));
      HALITE_ASSIGN_OR_RETURN(
          bool created,
          keys::CreateFileExclusive(dir_ / data.token, wire::Pack(TokenToValue(data)), 0600));
      if (created) return data;
    }
    return Error::Internal("cannot mint a token: every name was taken");
  }

  Result<Token> Get(std::string_view token) override {
    if (!ValidTokenName(token)) return Error::Unauthenticated("malformed token");
    const std::filesystem::path path = dir_ / std::string(token);
    auto bytes = keys::ReadFile(path);
    if (!bytes.ok()) {
      if (bytes.error().code != ErrorCode::kNotFound) {
        spdlog::warn("Authentication failure: can not read token file \"{}\": {}", path.string(),
                     bytes.error().message);
      }
      return Error::Unauthenticated("unknown token");
    }
    wire::UnpackLimits limits;
    limits.max_nodes = 4096;
    limits.max_bytes = 64 * 1024;
    auto value = wire::Unpack(*bytes, limits);
    Result<Token> parsed = value.ok() ? TokenFromValue(*value) : Result<Token>(value.error());
    if (!parsed.ok() || parsed->expire < Now()) {
      if (!parsed.ok()) spdlog::warn("Failed to load token {} - removing broken file", token);
      (void)keys::RemoveFile(path);
      return Error::Unauthenticated(parsed.ok() ? "expired token" : "broken token");
    }
    parsed->token = std::string(token);
    return parsed;
  }

  Status Remove(std::string_view token) override {
    if (!ValidTokenName(token)) return Error::NotFound("malformed token");
    return keys::RemoveFile(dir_ / std::string(token));
  }

 private:
  const std::filesystem::path dir_;
};

}  // namespace

bool ValidTokenName(std::string_view token) {
  if (token.empty() || token.size() > 128) return false;
  for (char c : token) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

wire::Value TokenToValue(const Token& token) {
  wire::Value v = wire::Value::MapOf({{"start", token.start},
                                      {"expire", token.expire},
                                      {"name", token.name},
                                      {"eauth", token.eauth}});
  if (!token.groups.empty()) {
    wire::Array groups;
    for (const auto& g : token.groups) groups.emplace_back(g);
    v.Set("groups", wire::Value(std::move(groups)));
  }
  v.Set("token", token.token);
  return v;
}

Result<Token> TokenFromValue(const wire::Value& value) {
  const std::string* name = value.FindStr("name");
  const std::string* eauth = value.FindStr("eauth");
  const wire::Value* start = value.Find("start");
  const wire::Value* expire = value.Find("expire");
  if (!name || !eauth || !expire || !expire->float64()) {
    return Error::InvalidArgument("a token needs name, eauth and expire");
  }
  Token t;
  t.name = *name;
  t.eauth = *eauth;
  t.expire = *expire->float64();
  t.start = start && start->float64() ? *start->float64() : 0;
  if (const std::string* tok = value.FindStr("token")) t.token = *tok;
  if (const wire::Value* groups = value.Find("groups"); groups && groups->array()) {
    for (const auto& g : *groups->array()) {
      if (g.str()) t.groups.push_back(*g.str());
    }
  }
  return t;
}

Result<std::unique_ptr<TokenStore>> MakeLocalFsTokenStore(std::filesystem::path dir) {
  HALITE_RETURN_IF_ERROR(keys::EnsureDir(dir, 0700));
  return std::unique_ptr<TokenStore>(std::make_unique<LocalFsTokenStore>(std::move(dir)));
}

}  // namespace halite::auth
