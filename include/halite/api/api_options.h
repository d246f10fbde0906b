// halite-api's settings: the `rest_cherrypy:` section of the master config, read as salt-api
// reads it (host, port, disable_ssl, ssl_crt, ssl_key, app, app_path, static, static_path,
// webhook_url, webhook_disable_auth, stats_disable_auth, max_request_body_size, debug), the
// master's netapi_enable_clients, and halite's own limits. Plain data; reentrant functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>

#include "halite/common/result.h"

namespace halite::api {

struct ApiOptions {
  std::string host = "0.0.0.0";
  std::uint16_t port = 8000;
  bool disable_ssl = false;
  std::string ssl_crt;
  std::string ssl_key;
  std::string app;  // a file served at app_path (and for text/html requests)
  std::string app_path = "/app";
  std::string static_dir;  // rest_cherrypy's `static`: a directory
  std::string static_path = "/static";
  std::string webhook_url = "/hook";
  bool webhook_disable_auth = false;
  bool stats_disable_auth = false;
  std::uint64_t max_request_body_size = 1048576;  // bytes; larger bodies get 413
  bool debug = false;
  // Salt 3006+: clients allowed through the API; empty (the default) refuses them all.
  std::set<std::string> netapi_enable_clients;
  // halite's own (under rest_cherrypy:).
  int max_connections = 1000;         // beyond: accepted and closed at once, counted
  double rate_limit_per_second = 50;  // requests per client address (token bucket)
  int rate_limit_burst = 200;
  std::chrono::seconds idle_timeout{60};  // a connection with no request for this long closes
  int worker_threads = 8;                 // blocking work (PAM, the master's sockets, files)
  std::size_t events_max_queue = 10000;   // events buffered for one /events client before it
                                          // is disconnected as too slow
  std::size_t events_max_queue_bytes = 64u << 20;  // the same in bytes
};

// Reads the settings above from the master config document. Every problem in one
// Error::InvalidArgument ("rest_cherrypy.port: ..."). TLS needs ssl_crt and ssl_key unless
// disable_ssl is set, as salt-api does.
Result<ApiOptions> ParseApiOptions(const YAML::Node& root);

}  // namespace halite::api
