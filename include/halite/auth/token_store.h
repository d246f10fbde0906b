// eauth tokens as Salt's localfs token store keeps them (salt/tokens/localfs.py): one file per
// token in token_dir (<cachedir>/tokens), named by the token (64 hex digits, sha256 of 512
// random bytes), holding salt.payload.dumps({start, expire, name, eauth[, groups], token}).
// Any master or halite-api sharing the cachedir accepts a token made by another.
// Thread-safe and safe across processes; blocks on disk: call from a blocking pool.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::auth {

struct Token {
  std::string token;
  std::string name;   // the user
  std::string eauth;  // the backend that authenticated them
  double start = 0;   // seconds since the epoch, as Python's time.time()
  double expire = 0;
  std::vector<std::string> groups;
};

// True for names a token can have: 1 to 128 hex digits. Anything else ("", "bad",
// "/etc/passwd", "../x") is no token and is never looked up on disk.
bool ValidTokenName(std::string_view token);

wire::Value TokenToValue(const Token& token);
Result<Token> TokenFromValue(const wire::Value& value);

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  // Stores `data` under a fresh name (data.token is set); durable when it returns.
  virtual Result<Token> Mint(Token data) = 0;
  // Error::Unauthenticated for a malformed name, an unknown token, an unreadable file or an
  // expired token (whose file is then removed, as Salt's get_tok does).
  virtual Result<Token> Get(std::string_view token) = 0;
  // NotFound when there was no such token.
  virtual Status Remove(std::string_view token) = 0;
};

// The localfs store in `dir` (created 0700 if missing).
Result<std::unique_ptr<TokenStore>> MakeLocalFsTokenStore(std::filesystem::path dir);

}  // namespace halite::auth
