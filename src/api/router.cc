#include "halite/api/router.h"

#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>

#include "halite/api/http_codec.h"
#include "halite/keys/fs.h"
#include "halite/wire/event.h"

namespace halite::api {

namespace {

constexpr std::uint64_t kMaxFileBytes = 64ull << 20;

std::string HttpDate(double epoch_seconds) {
  std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string FileContentType(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".html" || ext == ".htm") return "text/html;charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "application/javascript";
  if (ext == ".css") return "text/css";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".gif") return "image/gif";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".woff") return "font/woff";
  if (ext == ".woff2") return "font/woff2";
  if (ext == ".ttf") return "font/ttf";
  if (ext == ".txt") return "text/plain;charset=utf-8";
  return "application/octet-stream";
}

// `rest` under `base` with no way out of it ("..", absolute parts, NUL).
std::optional<std::filesystem::path> Under(const std::filesystem::path& base,
                                           std::string_view rest) {
  if (rest.find('\0') != std::string_view::npos) return std::nullopt;
  std::filesystem::path out = base;
  for (const auto& part : std::filesystem::path(std::string(rest))) {
    const std::string p = part.string();
    if (p.empty() || p == "/" || p == ".") continue;
    if (p == "..") return std::nullopt;
    out /= part;
  }
  return out;
}

bool PathIs(const std::string& path, const std::string& prefix, std::string* rest) {
  if (path == prefix) {
    rest->clear();
    return true;
  }
  if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
      (prefix == "/" || path[prefix.size()] == '/')) {
    *rest = path.substr(prefix.size() + (prefix == "/" ? 0 : 1));
    return true;
  }
  return false;
}

wire::Value ClientList() {
  wire::Array a;
  for (const char* c : {"local", "local_async", "local_batch", "local_subset", "runner",
                        "runner_async", "ssh", "wheel", "wheel_async"}) {
    a.emplace_back(c);
  }
  return wire::Value(std::move(a));
}

}  // namespace

Router::Router(const config::MasterConfig& config, const ApiOptions& options,
               auth::Authenticator& authenticator, Netapi& netapi, ApiCounters& counters)
    : config_(config),
      options_(options),
      auth_(authenticator),
      netapi_(netapi),
      counters_(counters) {}

Response Router::Page(int status, std::string_view message) {
  Response r;
  r.status = status;
  r.content_type = "text/html;charset=utf-8";
  r.body = ErrorPage(status, message);
  return r;
}

// ParseBody's errors: 406 for a content type no processor reads, else 400. One log line each,
// as a refused login has (ParseBody logs the reason a YAML body was refused at debug).
Response Router::BadBody(const Request& request, const Error& error) {
  spdlog::info("{} {} from {}: body refused: {}", request.method, request.path, request.remote_ip,
               error.message);
  return Page(error.code == ErrorCode::kFailedPrecondition ? 406 : 400, error.message);
}

Response Router::Data(const Request& request, int status, const wire::Value& value) {
  Response r;
  r.status = status;
  r.content_type = BestContentType(request.accept);
  r.body = Serialize(value, r.content_type);
  return r;
}

Response Router::Fail(const Request& request, const Error& error) {
  const int status = HttpStatusFor(error);
  if (status == 500) {
    spdlog::error("{} {}: {}", request.method, request.path, error.ToString());
    return Data(request, 500,
                wire::Value::MapOf(
                    {{"status", 500},
                     {"return", options_.debug ? error.message : "An unexpected error occurred"}}));
  }
  if (status == 401)
    spdlog::info("{} {} from {}: {}", request.method, request.path, request.remote_ip,
                 error.message);
  return Page(status, error.message);
}

Result<auth::Token> Router::SessionToken(const Request& request) {
  if (request.auth_token.empty()) return Error::Unauthenticated("");
  return auth_.CheckToken(request.auth_token);
}

Result<auth::Token> Router::EventsToken(const Request& request) {
  std::string token = request.auth_token;
  if (auto it = request.query.find("salt_token"); it != request.query.end()) token = it->second;
  if (auto it = request.query.find("token"); it != request.query.end()) token = it->second;
  if (token.empty()) return Error::Unauthenticated("no token");
  return auth_.CheckToken(token);
}

std::chrono::milliseconds Router::LoginFailed(const std::string& key) {
  counters_.logins_failed++;
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (failures_.size() > 100000) failures_.clear();  // bounded memory under a spray of addresses
  Failures& f = failures_[key];
  if (now - f.last > std::chrono::minutes(15)) f.count = 0;
  f.count = std::min(f.count + 1, 16);
  f.last = now;
  // 250 ms after the first failure, doubling to at most 8 s.
  return std::chrono::milliseconds(std::min<std::int64_t>(250LL << (f.count - 1), 8000));
}

void Router::LoginSucceeded(const std::string& key) {
  counters_.logins++;
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

Response Router::Handle(const Request& request) {
  counters_.requests++;
  if (request.method == "OPTIONS") return Response{200, "", "", {}, {}};
  std::string rest;
  // html_override: browsers asking for HTML anywhere outside the app and static paths get the
  // app (its client-side router takes over), as rest_cherrypy does.
  if (!options_.app.empty() && !PathIs(request.path, options_.app_path, &rest) &&
      !PathIs(request.path, options_.static_path, &rest) && request.accept != "*/*" &&
      request.accept.find("text/html") != std::string::npos) {
    return File(request, options_.app, true);
  }
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  if (request.path == "/" || request.path.empty()) {
    if (get) {
      return Data(request, 200,
                  wire::Value::MapOf({{"return", "Welcome"}, {"clients", ClientList()}}));
    }
    if (post) {
      // As Salt's salt_auth tool, which runs before its body tool: no session, no body read.
      // Credentials in the chunks are for /run; here they would let a stranger's body be
      // parsed (and passwords tried) on a URL that needs a login.
      auto session = SessionToken(request);
      if (!session.ok()) return Page(401, "");
      return Lowstate(request, session->token, true);
    }
  } else if (request.path == "/login") {
    if (get) {
      Response r =
          Data(request, 200, wire::Value::MapOf({{"status", 200}, {"return", "Please log in"}}));
      r.headers.emplace_back("WWW-Authenticate", "Session");
      return r;
    }
    if (post) return Login(request);
  } else if (request.path == "/logout") {
    if (post) return Logout(request);
  } else if (request.path == "/token") {
    if (post) return TokenPost(request);
  } else if (PathIs(request.path, "/minions", &rest)) {
    if (get || post) return Minions(request, rest);
  } else if (PathIs(request.path, "/jobs", &rest)) {
    if (get) return Jobs(request, rest);
  } else if (PathIs(request.path, "/keys", &rest)) {
    if (get) return Keys(request, rest);
  } else if (request.path == "/run") {
    if (post) return Lowstate(request, "", false);
  } else if (request.path == "/stats") {
    if (get) return Stats(request);
  } else if (PathIs(request.path, options_.webhook_url, &rest)) {
    if (post) return Hook(request, rest);
  } else if (PathIs(request.path, options_.app_path, &rest)) {
    if (get) return File(request, options_.app, true);
  } else if (!options_.static_dir.empty() && PathIs(request.path, options_.static_path, &rest)) {
    if (get) return File(request, rest, false);
  } else {
    return Page(404, "The path '" + request.path + "' was not found.");
  }
  return Page(405, "");
}

Response Router::Login(const Request& request) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(config_.sock_dir) / "halite_req.ipc", ec)) {
    return Page(503, "Salt Master is not available.");
  }
  auto data = ParseBody(request.content_type, request.body);
  if (!data.ok()) return BadBody(request, data.error());
  wire::Value creds = ToLowstate(std::move(*data));
  if (creds.array() && !creds.array()->empty()) creds = creds.array()->front();
  auto text = [&](const char* key) {
    const std::string* s = creds.FindStr(key);
    return s ? *s : std::string();
  };
  const std::string user = text("username");
  auto token = auth_.Login(user, text("password"), text("eauth"));
  if (!token.ok()) {
    Response r = Page(401, "Could not authenticate using provided credentials");
    r.delay = LoginFailed(request.remote_ip);
    return r;
  }
  LoginSucceeded(request.remote_ip);
  wire::Array perms_list = auth_.Permissions(*token);
  wire::Value perms =
      perms_list.empty() ? wire::Value::EmptyMap() : wire::Value(std::move(perms_list));
  wire::Array ret;
  ret.push_back(wire::Value::MapOf({{"token", token->token},
                                    {"expire", token->expire},
                                    {"start", token->start},
                                    {"user", token->name},
                                    {"eauth", token->eauth},
                                    {"perms", std::move(perms)}}));
  Response r = Data(request, 200, wire::Value::MapOf({{"return", wire::Value(std::move(ret))}}));
  r.headers.emplace_back("X-Auth-Token", token->token);
  r.headers.emplace_back("Set-Cookie", "session_id=" + token->token +
                                           "; expires=" + HttpDate(token->expire) + "; Path=/");
  return r;
}

Response Router::Logout(const Request& request) {
  auto session = SessionToken(request);
  if (!session.ok()) return Page(401, "");
  (void)auth_.Logout(session->token);
  Response r = Data(request, 200, wire::Value::MapOf({{"return", "Your token has been cleared"}}));
  r.headers.emplace_back("Set-Cookie",
                         "session_id=; expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/");
  return r;
}

Response Router::TokenPost(const Request& request) {
  auto data = ParseBody(request.content_type, request.body);
  if (!data.ok()) return BadBody(request, data.error());
  wire::Value lowstate = ToLowstate(std::move(*data));
  if (!lowstate.array()) return Page(400, "Lowstates must be a list");
  wire::Array out;
  for (const wire::Value& creds : *lowstate.array()) {
    const std::string* user = creds.FindStr("username");
    const std::string* password = creds.FindStr("password");
    const std::string* eauth = creds.FindStr("eauth");
    if (!user || !password || !eauth) {
      return Page(400, "Require \"username\", \"password\", and \"eauth\" params");
    }
    auto token = auth_.Login(*user, *password, *eauth);
    if (!token.ok()) {
      Response r = Page(401, "Authentication failure of type \"eauth\" occurred.");
      r.delay = LoginFailed(request.remote_ip);
      return r;
    }
    LoginSucceeded(request.remote_ip);
    out.push_back(auth::TokenToValue(*token));
  }
  return Data(request, 200, wire::Value(std::move(out)));
}

Response Router::Lowstate(const Request& request, const std::string& token, bool session) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(config_.sock_dir) / "halite_req.ipc", ec)) {
    return Page(503, "Salt Master is not available.");
  }
  auto data = ParseBody(request.content_type, request.body);
  if (!data.ok()) return BadBody(request, data.error());
  wire::Value lowstate = ToLowstate(std::move(*data));
  if (!lowstate.array()) return Page(400, "Lowstates must be a list");
  wire::Array out;
  for (wire::Value chunk : *lowstate.array()) {
    if (!chunk.is_map()) return Page(400, "Lowstates must be a list of maps");
    if (session && !token.empty()) chunk.Set("token", token);
    if (const wire::Value* t = chunk.Find("token")) {
      if (!t->str() || !auth::ValidTokenName(*t->str())) return Page(401, "Invalid token");
    }
    if (wire::Value* arg = chunk.Find("arg"); arg && !arg->is_array()) {
      *arg = wire::Value(wire::Array{*arg});
    }
    const bool each = YieldsEach(chunk.FindStr("client") ? *chunk.FindStr("client") : "");
    auto result = netapi_.Run(std::move(chunk));
    if (!result.ok()) {
      Response r = Fail(request, result.error());
      // A chunk on /run logs in with its own credentials: a wrong password there is a failed
      // login, counted and slowed as on /login, or /run would be the way around that throttle.
      // A bad token or an ACL refusal is not.
      if (Netapi::IsFailedLogin(result.error())) r.delay = LoginFailed(request.remote_ip);
      return r;
    }
    if (each && result->array()) {
      for (auto& item : *result->array()) out.push_back(std::move(item));
    } else {
      out.push_back(std::move(*result));
    }
  }
  return Data(request, 200, wire::Value::MapOf({{"return", wire::Value(std::move(out))}}));
}

Response Router::Minions(const Request& request, const std::string& mid) {
  auto session = SessionToken(request);
  if (!session.ok()) return Page(401, "");
  if (request.method == "POST") {
    auto data = ParseBody(request.content_type, request.body);
    if (!data.ok()) return BadBody(request, data.error());
    wire::Value lowstate = ToLowstate(std::move(*data));
    if (!lowstate.array()) return Page(400, "Lowstates must be a list");
    wire::Array ret;
    wire::Array links;
    for (wire::Value chunk : *lowstate.array()) {
      if (!chunk.is_map()) return Page(400, "Lowstates must be a list of maps");
      chunk.Set("client", "local_async");
      chunk.Set("token", session->token);
      auto r = netapi_.Run(std::move(chunk));
      if (!r.ok()) return Fail(request, r.error());
      if (const std::string* jid = r->FindStr("jid")) {
        links.push_back(wire::Value::MapOf({{"href", "/jobs/" + *jid}}));
      }
      ret.push_back(std::move(*r));
    }
    return Data(request, 202,
                wire::Value::MapOf(
                    {{"return", wire::Value(std::move(ret))},
                     {"_links", wire::Value::MapOf({{"jobs", wire::Value(std::move(links))}})}}));
  }
  auto r = netapi_.Run(wire::Value::MapOf({{"client", "local"},
                                           {"tgt", mid.empty() ? "*" : mid},
                                           {"fun", "grains.items"},
                                           {"token", session->token}}));
  if (!r.ok()) return Fail(request, r.error());
  return Data(request, 200, wire::Value::MapOf({{"return", wire::Value(wire::Array{*r})}}));
}

Response Router::Jobs(const Request& request, const std::string& jid) {
  auto session = SessionToken(request);
  if (!session.ok()) return Page(401, "");
  wire::Value chunk = wire::Value::MapOf({{"client", "runner"}, {"token", session->token}});
  if (jid.empty()) {
    chunk.Set("fun", "jobs.list_jobs");
  } else {
    chunk.Set("fun", "jobs.list_job");
    chunk.Set("jid", jid);
  }
  auto r = netapi_.Run(std::move(chunk));
  if (!r.ok()) return Fail(request, r.error());
  if (jid.empty()) {
    return Data(request, 200, wire::Value::MapOf({{"return", wire::Value(wire::Array{*r})}}));
  }
  wire::Value minion_ret = wire::Value::EmptyMap();
  if (const wire::Value* result = r->Find("Result"); result && result->map()) {
    for (const auto& [id, value] : *result->map()) {
      const wire::Value* ret = value.Find("return");
      if (id.str()) minion_ret.Set(*id.str(), ret ? *ret : wire::Value());
    }
  }
  return Data(request, 200,
              wire::Value::MapOf({{"info", wire::Value(wire::Array{*r})},
                                  {"return", wire::Value(wire::Array{std::move(minion_ret)})}}));
}

Response Router::Keys(const Request& request, const std::string& mid) {
  auto session = SessionToken(request);
  if (!session.ok()) return Page(401, "");
  wire::Value chunk = wire::Value::MapOf({{"client", "wheel"}, {"token", session->token}});
  if (mid.empty()) {
    chunk.Set("fun", "key.list_all");
  } else {
    chunk.Set("fun", "key.finger");
    chunk.Set("match", mid);
  }
  auto r = netapi_.Run(std::move(chunk));
  if (!r.ok()) return Fail(request, r.error());
  const wire::Value* data = r->Find("data");
  const wire::Value* ret = data ? data->Find("return") : nullptr;
  return Data(request, 200, wire::Value::MapOf({{"return", ret ? *ret : wire::Value::EmptyMap()}}));
}

Response Router::Hook(const Request& request, const std::string& rest) {
  if (!options_.webhook_disable_auth && !SessionToken(request).ok()) return Page(401, "");
  auto data = ParseBody(request.content_type, request.body);
  if (!data.ok()) return BadBody(request, data.error());
  wire::Value post = data->is_nil() ? wire::Value::EmptyMap() : std::move(*data);
  wire::Value headers = wire::Value::EmptyMap();
  for (const auto& [k, v] : request.headers) headers.Set(k, v);
  const std::string tag = "salt/netapi/hook" + (rest.empty() ? "" : "/" + rest);
  if (!wire::ValidEventTag(tag)) return Page(400, "Invalid hook path");
  Status fired = netapi_.FireEvent(
      tag, wire::Value::MapOf({{"body", request.body}, {"post", post}, {"headers", headers}}));
  return Data(request, 200, wire::Value::MapOf({{"success", fired.ok()}}));
}

Response Router::Stats(const Request& request) {
  if (!options_.stats_disable_auth && !SessionToken(request).ok()) return Page(401, "");
  const ApiCounters& c = counters_;
  return Data(
      request, 200,
      wire::Value::MapOf(
          {{"halite-api", wire::Value::MapOf({{"Requests", c.requests.load()},
                                              {"Logins", c.logins.load()},
                                              {"Failed Logins", c.logins_failed.load()},
                                              {"Rate Limited", c.rate_limited.load()},
                                              {"Connections Refused", c.connections_refused.load()},
                                              {"Event Streams", c.events_clients.load()},
                                              {"Events Sent", c.events_sent.load()},
                                              {"Slow Event Clients Dropped",
                                               c.events_slow_disconnects.load()}})}}));
}

Response Router::File(const Request& request, const std::string& path, bool app) {
  std::optional<std::filesystem::path> file;
  if (app) {
    if (path.empty()) return Page(404, "No app is configured (rest_cherrypy: app).");
    file = path;
  } else {
    file = Under(options_.static_dir, path);
  }
  if (!file) return Page(404, "The path '" + request.path + "' was not found.");
  std::error_code ec;
  const auto size = std::filesystem::file_size(*file, ec);
  if (ec || !std::filesystem::is_regular_file(*file, ec) || size > kMaxFileBytes) {
    return Page(404, "The path '" + request.path + "' was not found.");
  }
  auto bytes = keys::ReadFile(*file);
  if (!bytes.ok()) return Page(404, "The path '" + request.path + "' was not found.");
  Response r;
  r.content_type = FileContentType(*file);
  r.body = std::move(*bytes);
  return r;
}

}  // namespace halite::api
