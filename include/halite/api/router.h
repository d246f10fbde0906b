// rest_cherrypy's URL map over plain request values: /, /login, /logout, /token, /minions,
// /jobs, /keys, /run, /hook/<path>, /stats, the app and static files. /events is the
// server's (it streams); Router only checks its token. Blocking (eauth, the master's
// sockets, files): call from the API's worker threads. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "halite/api/api_options.h"
#include "halite/api/netapi.h"
#include "halite/auth/authenticator.h"
#include "halite/common/check.h"

namespace halite::api {

struct Request {
  std::string method;
  std::string path;  // the target before '?', percent-decoded
  std::map<std::string, std::string> query;
  std::string accept;
  std::string content_type;
  std::string auth_token;  // X-Auth-Token, else the session_id cookie; empty: none
  std::map<std::string, std::string> headers;  // every header, for webhooks
  std::string body;
  std::string remote_ip;
};

struct Response {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Failed logins are answered this much later (the server waits on a timer, not a thread).
  std::chrono::milliseconds delay{0};
};

struct ApiCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> logins{0};
  std::atomic<std::uint64_t> logins_failed{0};
  std::atomic<std::uint64_t> rate_limited{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> events_clients{0};  // open /events streams
  std::atomic<std::uint64_t> events_sent{0};
  std::atomic<std::uint64_t> events_slow_disconnects{0};  // dropped: too far behind
};

class Router {
 public:
  Router(const config::MasterConfig& config, const ApiOptions& options,
         auth::Authenticator& authenticator, Netapi& netapi, ApiCounters& counters);
  Response Handle(const Request& request);
  // /events' token: X-Auth-Token / session cookie, ?token= or ?salt_token=. The token's
  // expiry, or Error::Unauthenticated.
  Result<auth::Token> EventsToken(const Request& request);
  // Whether the static or app file part of the URL map serves `request` (the server reads
  // files on a worker all the same; this only keeps /events out).
  bool IsEvents(const Request& request) const { return request.path == "/events"; }

 private:
  Response Login(const Request& request);
  Response Logout(const Request& request);
  Response TokenPost(const Request& request);
  Response Lowstate(const Request& request, const std::string& token, bool session);
  Response Minions(const Request& request, const std::string& mid);
  Response Jobs(const Request& request, const std::string& jid);
  Response Keys(const Request& request, const std::string& mid);
  Response Hook(const Request& request, const std::string& rest);
  Response Stats(const Request& request);
  Response File(const Request& request, const std::string& path, bool app);
  // 401 unless the request's session token is valid.
  Result<auth::Token> SessionToken(const Request& request);
  Response Data(const Request& request, int status, const wire::Value& value);
  Response Fail(const Request& request, const Error& error);
  Response BadBody(const Request& request, const Error& error);
  Response Page(int status, std::string_view message);
  std::chrono::milliseconds LoginFailed(const std::string& key);
  void LoginSucceeded(const std::string& key);

  const config::MasterConfig& config_;
  const ApiOptions& options_;
  auth::Authenticator& auth_;
  Netapi& netapi_;
  ApiCounters& counters_;
  std::mutex mu_;
  struct Failures {
    int count = 0;
    std::chrono::steady_clock::time_point last;
  };
  std::map<std::string, Failures> failures_ HALITE_GUARDED_BY(mu_);  // by client address
};

}  // namespace halite::api
