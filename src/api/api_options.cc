#include "halite/api/api_options.h"

#include "halite/config/config.h"
#include "halite/config/yaml.h"

namespace halite::api {

Result<ApiOptions> ParseApiOptions(const YAML::Node& root) {
  ApiOptions o;
  config::YamlMapReader top(root);
  std::vector<std::string> clients;
  top.ReadStringList("netapi_enable_clients", clients, false);
  o.netapi_enable_clients.insert(clients.begin(), clients.end());
  YAML::Node section;
  top.ReadMap("rest_cherrypy", section);
  config::YamlMapReader r(section, "rest_cherrypy.");
  r.ReadString("host", o.host);
  r.ReadInt("port", o.port, 0, 65535);
  r.ReadBool("disable_ssl", o.disable_ssl);
  r.ReadString("ssl_crt", o.ssl_crt);
  r.ReadString("ssl_key", o.ssl_key);
  r.ReadString("app", o.app);
  r.ReadString("app_path", o.app_path);
  r.ReadString("static", o.static_dir);
  r.ReadString("static_path", o.static_path);
  r.ReadString("webhook_url", o.webhook_url);
  r.ReadBool("webhook_disable_auth", o.webhook_disable_auth);
  r.ReadBool("stats_disable_auth", o.stats_disable_auth);
  r.ReadInt("max_request_body_size", o.max_request_body_size, 1, 1LL << 32);
  r.ReadBool("debug", o.debug);
  r.ReadInt("halite_max_connections", o.max_connections, 1, 1000000);
  std::int64_t rate = 0;
  if (r.ReadInt("halite_rate_limit_per_second", rate, 1, 1000000)) {
    o.rate_limit_per_second = static_cast<double>(rate);
  }
  r.ReadInt("halite_rate_limit_burst", o.rate_limit_burst, 1, 10000000);
  r.ReadDuration("halite_idle_timeout", o.idle_timeout, 1, 86400);
  r.ReadInt("halite_worker_threads", o.worker_threads, 1, 256);
  r.ReadInt("halite_events_max_queue", o.events_max_queue, 16, 10000000);
  r.ReadInt("halite_events_max_queue_bytes", o.events_max_queue_bytes, 1 << 20,
            std::int64_t{1} << 40);
  std::vector<config::ConfigProblem> problems = top.problems();
  problems.insert(problems.end(), r.problems().begin(), r.problems().end());
  for (std::string* path : {&o.app_path, &o.static_path, &o.webhook_url}) {
    if (path->empty() || (*path)[0] != '/') *path = "/" + *path;
    while (path->size() > 1 && path->back() == '/') path->pop_back();
  }
  if (!o.disable_ssl && (o.ssl_crt.empty() || o.ssl_key.empty())) {
    problems.push_back(
        {"rest_cherrypy.ssl_crt", "ssl_crt and ssl_key are required unless disable_ssl is True"});
  }
  HALITE_RETURN_IF_ERROR(config::ProblemsToStatus(problems));
  return o;
}

}  // namespace halite::api
