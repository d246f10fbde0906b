// cluster.*: halite's own runners. cluster.status asks the running master for its peer links;
// cluster.haproxy_config needs no master: the masters are this one and its cluster_peers.
#include <sys/resource.h>

#include <algorithm>

#include "halite/cluster/haproxy_config.h"
#include "internal.h"

namespace halite::runners {

namespace {

using wire::Value;

Result<RunnerResult> HaproxyConfig(RunnerEnv& env, const BoundArgs& a) {
  const config::MasterConfig& cfg = *env.config;
  cluster::HaproxyOptions h;
  // HAProxy needs two descriptors per connection: keep maxconn within this host's limit.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_max != RLIM_INFINITY) {
    h.maxconn = std::min<int>(h.maxconn, static_cast<int>((lim.rlim_max - 100) / 2));
  }
  if (!a.Get("bind").is_nil()) h.bind_address = a.Text("bind");
  if (!a.Get("maxconn").is_nil()) {
    auto n = a.Get("maxconn").int64();
    if (!n || *n <= 0) return Error::InvalidArgument("maxconn must be a positive number");
    h.maxconn = static_cast<int>(*n);
  }
  if (!a.Get("stats_socket").is_nil()) h.stats_socket = a.Text("stats_socket");
  h.publish_port = cfg.publish_port;
  h.ret_port = cfg.ret_port;
  h.health_port = cfg.health_port;
  h.publish_session = cfg.publish_session;
  h.masters.push_back({cfg.id, cfg.id});
  for (const auto& peer : cfg.cluster_peers) h.masters.push_back({peer, peer});
  return RunnerResult{Value(cluster::RenderHaproxyConfig(h)), "raw_text"};
}

const Value kNone;

}  // namespace

void AddClusterRunners(RunnerTable& table) {
  table.Add({"cluster.status",
             {},
             false,
             R"(
    This master's peer links: state, last contact and backlog of each peer.

    CLI Example:

        halite-run cluster.status
    )",
             [](RunnerEnv& env, const BoundArgs&) -> Result<RunnerResult> {
               HALITE_ASSIGN_OR_RETURN(
                   Value status,
                   internal::AskMaster(env, Value::MapOf({{"cmd", "_halite_cluster_status"}})));
               return RunnerResult{std::move(status), ""};
             }});
  table.Add({"cluster.haproxy_config",
             {{"bind", kNone}, {"maxconn", kNone}, {"stats_socket", kNone}},
             false,
             R"(
    An HAProxy configuration for this cluster's masters (this one and cluster_peers), on
    stdout. bind: the address HAProxy listens on; maxconn; stats_socket: a path.

    CLI Example:

        halite-run cluster.haproxy_config bind=10.0.0.1 > /etc/haproxy/haproxy.cfg
    )",
             HaproxyConfig});
}

}  // namespace halite::runners
