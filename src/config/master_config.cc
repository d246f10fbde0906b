#include "halite/config/master_config.h"

#include <utility>

#include "checks.h"
#include "halite/config/yaml.h"
#include "salt_master_keys.h"

namespace halite::config {
namespace {

using internal::kMaxInt;
using internal::kMaxPort;
using internal::kMaxSeconds;
using internal::Quoted;

constexpr std::int64_t kMaxMinutes = kMaxSeconds / 60;
constexpr std::int64_t kMaxKeepJobsHours = kMaxSeconds / 3600;

// nodegroups: name -> "compound expression" or [word, ...] (Salt accepts both).
void ReadNodegroups(YamlMapReader& r, MasterConfig& c) {
  YAML::Node node;
  if (!r.ReadMap("nodegroups", node)) return;
  for (const auto& item : node) {
    const std::string name = item.first.Scalar();
    const YAML::Node& def = item.second;
    std::vector<std::string> words;
    if (def.IsScalar()) {
      std::string text = def.Scalar();
      std::size_t pos = 0;
      while ((pos = text.find_first_not_of(" \t\n", pos)) != std::string::npos) {
        std::size_t end = std::min(text.find_first_of(" \t\n", pos), text.size());
        words.push_back(text.substr(pos, end - pos));
        pos = end;
      }
    } else if (def.IsSequence()) {
      for (const auto& word : def) {
        if (!word.IsScalar()) {
          r.AddProblem("nodegroups." + name, "list items must be strings");
          break;
        }
        words.push_back(word.Scalar());
      }
    } else {
      r.AddProblem("nodegroups." + name, "must be a string or a list of strings");
      continue;
    }
    if (words.empty()) r.AddProblem("nodegroups." + name, "must not be empty");
    c.nodegroups[name] = std::move(words);
  }
}

void ReadAll(YamlMapReader& r, MasterConfig& c) {
  if (!r.ReadString("id", c.id) || c.id.empty()) c.id = DefaultId();  // Salt: empty id = unset
  r.ReadString("interface", c.interface);
  r.ReadInt("publish_port", c.publish_port, 1, kMaxPort);
  r.ReadInt("ret_port", c.ret_port, 1, kMaxPort);
  r.ReadString("root_dir", c.root_dir);
  r.ReadString("pki_dir", c.pki_dir);
  r.ReadString("cachedir", c.cachedir);
  r.ReadString("sock_dir", c.sock_dir);
  r.ReadString("log_file", c.log_file);
  r.ReadString("log_level", c.log_level);
  r.ReadString("user", c.user);

  r.ReadBool("auto_accept", c.auto_accept);
  r.ReadBool("open_mode", c.open_mode);
  r.ReadString("autosign_file", c.autosign_file);
  r.ReadString("autoreject_file", c.autoreject_file);
  r.ReadDuration("autosign_timeout", c.autosign_timeout, 0, kMaxMinutes);
  r.ReadBool("permissive_pki_access", c.permissive_pki_access);
  r.ReadInt("keysize", c.keysize, internal::kMinKeysize, internal::kMaxKeysize);
  r.ReadInt("max_minions", c.max_minions, 0, kMaxInt);
  r.ReadInt("max_pending_keys", c.max_pending_keys, 0, kMaxInt);
  r.ReadBool("auth_events", c.auth_events);
  r.ReadBool("minion_data_cache", c.minion_data_cache);
  r.ReadString("cache", c.cache);
  r.ReadBool("file_recv", c.file_recv);
  r.ReadInt("file_recv_max_size", c.file_recv_max_size, 0, 1 << 20);

  r.ReadInt("worker_threads", c.worker_threads, 1, 1024);
  // keep_jobs (hours) is Salt's deprecated spelling; it counts only without keep_jobs_seconds.
  const bool has_keep_jobs_seconds = r.Has("keep_jobs_seconds");
  r.ReadDuration("keep_jobs_seconds", c.keep_jobs_seconds, 0, kMaxSeconds);
  std::chrono::hours keep_jobs{0};
  if (r.ReadDuration("keep_jobs", keep_jobs, 0, kMaxKeepJobsHours)) {
    if (has_keep_jobs_seconds) {
      r.AddWarning("keep_jobs: ignored because keep_jobs_seconds is set");
    } else {
      c.keep_jobs_seconds = keep_jobs;
      r.AddWarning("keep_jobs: deprecated; use keep_jobs_seconds: " +
                   std::to_string(c.keep_jobs_seconds.count()));
    }
  }
  r.ReadString("master_job_cache", c.master_job_cache);
  // Salt's job_cache is a boolean; halite's backend options are a map under the same name.
  if (r.HasScalar("job_cache")) {
    r.ReadBool("job_cache", c.store_returns);
  } else {
    r.ReadMap("job_cache", c.job_cache);
  }
  r.ReadDuration("publish_session", c.publish_session, 1, kMaxSeconds);
  r.ReadDuration("request_server_ttl", c.request_server_ttl, 0, kMaxSeconds);
  r.ReadDuration("loop_interval", c.loop_interval, 1, kMaxSeconds);
  r.ReadBool("rotate_aes_key", c.rotate_aes_key);

  r.ReadBool("sign_pub_messages", c.sign_pub_messages);
  r.ReadString("publish_signing_algorithm", c.publish_signing_algorithm);
  r.ReadBool("zmq_filtering", c.zmq_filtering);
  r.ReadInt("pub_hwm", c.pub_hwm, 0, kMaxInt);
  r.ReadInt("zmq_backlog", c.zmq_backlog, 0, kMaxInt);
  r.ReadBool("ipv6", c.ipv6);
  r.ReadBool("tcp_keepalive", c.tcp_keepalive);
  r.ReadInt("tcp_keepalive_idle", c.tcp_keepalive_idle, -1, kMaxInt);
  r.ReadInt("tcp_keepalive_cnt", c.tcp_keepalive_cnt, -1, kMaxInt);
  r.ReadInt("tcp_keepalive_intvl", c.tcp_keepalive_intvl, -1, kMaxInt);

  r.ReadStringListMap("file_roots", c.file_roots);
  r.ReadStringListMap("pillar_roots", c.pillar_roots);

  r.ReadString("renderer", c.renderer);
  r.ReadStringList("renderer_blacklist", c.renderer_blacklist, /*allow_single=*/false);
  r.ReadStringList("renderer_whitelist", c.renderer_whitelist, /*allow_single=*/false);
  r.ReadString("state_top", c.state_top);
  r.ReadString("pillar_source_merging_strategy", c.pillar_source_merging_strategy);
  r.ReadBool("pillar_merge_lists", c.pillar_merge_lists);
  r.ReadBool("pillar_includes_override_sls", c.pillar_includes_override_sls);
  r.ReadBool("pillar_safe_render_error", c.pillar_safe_render_error);
  r.ReadString("pillarenv", c.pillarenv);
  r.ReadBool("pillarenv_from_saltenv", c.pillarenv_from_saltenv);
  r.ReadMap("jinja_env", c.jinja_env);
  r.ReadMap("jinja_sls_env", c.jinja_sls_env);
  r.ReadBool("allow_undefined", c.allow_undefined);
  r.ReadString("gpg_keydir", c.gpg_keydir);
  r.ReadBool("pillar_allow_cmd_run", c.pillar_allow_cmd_run);
  r.ReadSequence("ext_pillar", c.ext_pillar);
  r.ReadBool("ext_pillar_first", c.ext_pillar_first);
  r.ReadInt("render_processes", c.render_processes, 0, 64);
  r.ReadDuration("render_timeout_ms", c.render_timeout_ms, 100, 3600000);
  r.ReadInt("render_memory_limit", c.render_memory_limit, 64ll << 20, std::int64_t{1} << 40);
  r.ReadInt("render_max_output", c.render_max_output, 1024, std::int64_t{1} << 32);
  r.ReadString("render_program", c.render_program);
  r.ReadDuration("timeout", c.timeout, 1, kMaxSeconds);
  r.ReadDuration("gather_job_timeout", c.gather_job_timeout, 1, kMaxSeconds);
  r.ReadBool("presence_events", c.presence_events);
  ReadNodegroups(r, c);

  r.ReadString("cluster_id", c.cluster_id);
  r.ReadStringList("cluster_peers", c.cluster_peers, /*allow_single=*/false);
  r.ReadString("cluster_pki_dir", c.cluster_pki_dir);
  r.ReadInt("cluster_pool_port", c.cluster_pool_port, 1, kMaxPort);
  r.ReadInt("cluster_event_backlog_bytes", c.cluster_event_backlog_bytes, 1, std::int64_t{1} << 40);
  r.ReadString("cluster_backend", c.cluster_backend);
  r.ReadStringList("etcd_endpoints", c.etcd_endpoints, /*allow_single=*/true);
  r.ReadString("etcd_prefix", c.etcd_prefix);
  r.ReadString("etcd_cert", c.etcd_cert);
  r.ReadString("etcd_key", c.etcd_key);
  r.ReadString("etcd_cacert", c.etcd_cacert);

  r.ReadInt("health_port", c.health_port, 0, kMaxPort);
  r.ReadInt("max_request_bytes", c.max_request_bytes, 1024, std::int64_t{1} << 32);
  r.ReadDuration("auth_queue_timeout_ms", c.auth_queue_timeout_ms, 0, 600000);
  r.ReadDuration("auth_reply_cache_wait_ms", c.auth_reply_cache_wait_ms, -1, 600000);
  r.ReadInt("minimum_request_version", c.minimum_request_version, 0, 3);
  r.ReadBool("allow_unsigned_v2_requests", c.allow_unsigned_v2_requests);
  c.has_mine_get = r.ReadStringListMap("mine_get", c.mine_get);
  r.ReadStringListMap("peer", c.peer);
  r.ReadStringListMap("peer_run", c.peer_run);
  r.ReadInt("max_events_per_request", c.max_events_per_request, 1, 1000000);
  r.ReadInt("max_event_size", c.max_event_size, 1024, 1 << 30);
  r.ReadInt("mine_max_bytes", c.mine_max_bytes, 0, std::int64_t{1} << 40);
  r.ReadInt("minion_events_per_second", c.minion_events_per_second, 1, 1000000);
  r.ReadInt("minion_events_burst", c.minion_events_burst, 1, 10000000);
  r.ReadInt("minion_requests_running", c.minion_requests_running, 1, 1024);
  r.ReadInt("minion_requests_waiting", c.minion_requests_waiting, 0, 1000000);
  r.ReadInt("request_queue_max", c.request_queue_max, 1, 10000000);
  r.ReadInt("request_queue_max_bytes", c.request_queue_max_bytes, 1 << 20, std::int64_t{1} << 40);
  r.ReadInt("return_batch_max", c.return_batch_max, 1, 1000000);
  r.ReadBool("publish_replay", c.publish_replay);
  r.ReadDuration("publish_replay_grace", c.publish_replay_grace, 0, 600);
  r.ReadDuration("return_fsync_interval_ms", c.return_fsync_interval_ms, 0, 60000);
}

void CheckInterface(YamlMapReader& r, const MasterConfig& c) {
  if (internal::IsIpv4Literal(c.interface)) return;
  if (internal::IsIpv6Literal(c.interface)) {
    if (!c.ipv6 && !r.HasProblem("ipv6")) {
      r.AddProblem("interface",
                   "an IPv6 address needs ipv6: true (got " + Quoted(c.interface) + ")");
    }
    return;
  }
  r.AddProblem("interface",
               "must be an IP address (IPv6 without brackets); halite never resolves host names "
               "(got " +
                   Quoted(c.interface) + ")");
}

// Every listening port must differ from the others bound on `interface`.
void CheckPortsDiffer(YamlMapReader& r, const MasterConfig& c) {
  struct Port {
    std::string_view key;
    std::uint16_t port;
  };
  std::vector<Port> ports = {{"publish_port", c.publish_port}, {"ret_port", c.ret_port}};
  if (c.health_port != 0) ports.push_back({"health_port", c.health_port});
  if (!c.cluster_id.empty()) ports.push_back({"cluster_pool_port", c.cluster_pool_port});
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (r.HasProblem(ports[i].key)) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (r.HasProblem(ports[j].key) || ports[i].port != ports[j].port) continue;
      r.AddProblem(ports[i].key, "must differ from " + std::string(ports[j].key) + " (got " +
                                     std::to_string(ports[i].port) + ")");
      break;
    }
  }
}

void CheckRoots(YamlMapReader& r, std::string_view key,
                const std::map<std::string, std::vector<std::string>>& roots) {
  for (const auto& [env, dirs] : roots) {
    const std::string env_key = std::string(key) + "." + env;
    if (env.empty()) r.AddProblem(env_key, "environment names must not be empty");
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      internal::CheckAbsolutePath(r, env_key + "[" + std::to_string(i) + "]", dirs[i],
                                  /*may_be_empty=*/false);
    }
  }
}

// An etcd endpoint as halite can use it: http://<IPv4 or [IPv6]>:<port>.
std::string EtcdEndpointProblem(const std::string& endpoint) {
  const bool tls = endpoint.rfind("https://", 0) == 0;
  if (!tls && endpoint.rfind("http://", 0) != 0) return "must start with http:// or https://";
  std::string rest = endpoint.substr(tls ? 8 : 7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::string host;
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find("]:");
    if (close == std::string::npos) return "must be http://[IPv6]:port";
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
    if (!internal::IsIpv6Literal(host)) return "the host must be an IP address";
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) return "needs a port (http://IP:2379)";
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (!internal::IsIpv4Literal(host)) {
      return "the host must be an IP address (halite never resolves names)";
    }
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
      std::stoi(port) > kMaxPort) {
    return "bad port '" + port + "'";
  }
  return "";
}

void CheckEtcd(YamlMapReader& r, const MasterConfig& c) {
  if (c.cluster_backend != "files" && c.cluster_backend != "etcd") {
    r.AddProblem("cluster_backend",
                 "must be files or etcd (got " + Quoted(c.cluster_backend) + ")");
    return;
  }
  if (c.cluster_backend == "files") {
    if (!c.etcd_endpoints.empty()) {
      r.AddWarning("etcd_endpoints: ignored because cluster_backend is files");
    }
    return;
  }
  if (c.cluster_id.empty()) r.AddProblem("cluster_backend", "etcd needs cluster_id");
  if (!c.cluster_peers.empty()) {
    r.AddWarning("cluster_peers: ignored with cluster_backend: etcd (members come from etcd)");
  }
  if (c.interface == "0.0.0.0" || c.interface == "::") {
    r.AddProblem("interface",
                 "cluster_backend: etcd needs the address peers reach this master "
                 "at (it goes into the member record), not " +
                     Quoted(c.interface));
  }
  if (c.etcd_endpoints.empty()) {
    r.AddProblem("etcd_endpoints", "cluster_backend: etcd needs at least one endpoint");
  }
  for (std::size_t i = 0; i < c.etcd_endpoints.size(); ++i) {
    const std::string problem = EtcdEndpointProblem(c.etcd_endpoints[i]);
    if (!problem.empty()) {
      r.AddProblem("etcd_endpoints[" + std::to_string(i) + "]",
                   problem + " (got " + Quoted(c.etcd_endpoints[i]) + ")");
    }
  }
  if (c.etcd_prefix.size() < 2 || c.etcd_prefix.front() != '/' || c.etcd_prefix.back() != '/') {
    r.AddProblem("etcd_prefix", "must start and end with '/' (got " + Quoted(c.etcd_prefix) + ")");
  }
  // TLS: all endpoints https or none (keys and session keys cross this link), the client
  // pair complete, files absolute.
  std::size_t https = 0;
  for (const auto& e : c.etcd_endpoints) https += e.rfind("https://", 0) == 0 ? 1 : 0;
  if (https != 0 && https != c.etcd_endpoints.size()) {
    r.AddProblem("etcd_endpoints", "mixes http:// and https:// (use TLS for all or none)");
  }
  if (c.etcd_cert.empty() != c.etcd_key.empty()) {
    r.AddProblem(c.etcd_cert.empty() ? "etcd_cert" : "etcd_key",
                 "etcd_cert and etcd_key go together (the client's certificate and its key)");
  }
  if (https == 0 && (!c.etcd_cert.empty() || !c.etcd_key.empty() || !c.etcd_cacert.empty())) {
    r.AddProblem("etcd_endpoints",
                 "etcd TLS files are set but the endpoints are http://: use https:// endpoints");
  }
  internal::CheckAbsolutePath(r, "etcd_cert", c.etcd_cert, /*may_be_empty=*/true);
  internal::CheckAbsolutePath(r, "etcd_key", c.etcd_key, /*may_be_empty=*/true);
  internal::CheckAbsolutePath(r, "etcd_cacert", c.etcd_cacert, /*may_be_empty=*/true);
}

void CheckCluster(YamlMapReader& r, const MasterConfig& c) {
  for (std::size_t i = 0; i < c.cluster_peers.size(); ++i) {
    const std::string& peer = c.cluster_peers[i];
    const std::string key = "cluster_peers[" + std::to_string(i) + "]";
    if (peer.empty()) {
      r.AddProblem(key, "must not be empty");
    } else if (peer == c.id) {
      r.AddProblem(key, "lists the other masters, not this one's id (got " + Quoted(peer) + ")");
    } else {
      for (std::size_t j = 0; j < i; ++j) {
        if (c.cluster_peers[j] != peer) continue;
        r.AddProblem(key, "listed twice (got " + Quoted(peer) + ")");
        break;
      }
    }
  }
  CheckEtcd(r, c);
  if (c.cluster_id.empty()) {
    if (!c.cluster_peers.empty())
      r.AddWarning("cluster_peers: ignored because cluster_id is not set");
    if (!c.cluster_pki_dir.empty()) {
      r.AddWarning("cluster_pki_dir: ignored because cluster_id is not set");
    }
  }
}

// Salt keys halite reads but does not act on: said at start and by --check, never silent,
// in the form of DescribeUnreadMasterKey's lines ("key: not supported: why").
void WarnNotImplemented(YamlMapReader& r, const MasterConfig& c) {
  if (c.zmq_filtering) {
    r.AddWarning(
        "zmq_filtering: not supported: True is not implemented: every publish goes to every "
        "minion, which matches the target itself (as with False)");
  }
  if (c.user != "root") {
    r.AddWarning(
        "user: not supported: halite-master does not switch users; it runs as the user that "
        "starts it (got '" +
        c.user + "')");
  }
}

void Validate(YamlMapReader& r, const MasterConfig& c) {
  WarnNotImplemented(r, c);
  internal::CheckId(r, "id", c.id);
  CheckInterface(r, c);
  CheckPortsDiffer(r, c);
  internal::CheckAbsolutePath(r, "root_dir", c.root_dir, /*may_be_empty=*/true);
  internal::CheckAbsolutePath(r, "pki_dir", c.pki_dir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "cachedir", c.cachedir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "sock_dir", c.sock_dir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "log_file", c.log_file, /*may_be_empty=*/true);
  internal::CheckLogLevel(r, "log_level", c.log_level);
  internal::CheckNotEmpty(r, "user", c.user);
  internal::CheckAbsolutePath(r, "autosign_file", c.autosign_file, /*may_be_empty=*/true);
  internal::CheckAbsolutePath(r, "autoreject_file", c.autoreject_file, /*may_be_empty=*/true);
  internal::WarnWeakKeysize(r, "keysize", c.keysize);
  internal::CheckOneOf(r, "master_job_cache", c.master_job_cache,
                       {kJobCacheLocal, kJobCachePostgres});
  internal::CheckOneOf(r, "cache", c.cache, {kCacheLocalfs, kCachePostgres});
  if (c.cache == kCachePostgres && c.master_job_cache != kJobCachePostgres) {
    r.AddProblem("cache",
                 "postgres keeps the minion data cache in the job cache's database: it needs "
                 "master_job_cache: postgres");
  }
  internal::CheckOneOf(r, "publish_signing_algorithm", c.publish_signing_algorithm,
                       {"PKCS1v15-SHA1", "PKCS1v15-SHA224"});
  CheckRoots(r, "file_roots", c.file_roots);
  CheckRoots(r, "pillar_roots", c.pillar_roots);
  internal::CheckAbsolutePath(r, "cluster_pki_dir", c.cluster_pki_dir, /*may_be_empty=*/true);
  CheckCluster(r, c);
}

// What Salt's apply_master_config does after reading: root_dir in front of the local paths,
// and the cluster_pki_dir fallback.
void Derive(YamlMapReader& r, MasterConfig& c) {
  for (std::string* path :
       {&c.pki_dir, &c.cachedir, &c.sock_dir, &c.log_file, &c.autosign_file, &c.autoreject_file}) {
    *path = internal::PrefixRootDir(c.root_dir, *path);
  }
  if (!c.cluster_id.empty() && c.cluster_pki_dir.empty()) {
    c.cluster_pki_dir = c.pki_dir;
    r.AddWarning("cluster_pki_dir: not set; using pki_dir (" + c.pki_dir +
                 "), which every master of the cluster must then share");
  }
}

// The keys the master's token publishes and halite-api read from this same document
// (auth::ParseAuthOptions, api::ParseApiOptions): checked for their type here so that --check
// names a bad one and no "not supported" warning is given for them.
void ReadApiKeys(YamlMapReader& r) {
  YAML::Node node;
  std::chrono::seconds seconds{};
  std::string text;
  bool flag = false;
  std::vector<std::string> list;
  r.ReadMap("external_auth", node);
  r.ReadMap("rest_cherrypy", node);
  r.ReadDuration("token_expire", seconds, 1, 10LL * 365 * 86400);
  r.ReadString("token_dir", text);
  r.ReadString("auth.pam.service", text);
  r.ReadBool("permissive_acl", flag);
  r.ReadBool("halite_eauth_auto", flag);
  r.ReadMap("publisher_acl", node);
  r.ReadMap("publisher_acl_blacklist", node);
  r.ReadBool("client_acl_verify", flag);
  r.ReadStringList("netapi_enable_clients", list, false);
}

}  // namespace

Result<Loaded<MasterConfig>> MasterConfigFromYaml(const YAML::Node& root) {
  YamlMapReader reader(root);
  MasterConfig config;
  ReadAll(reader, config);
  // No folder is shared with cluster_backend: etcd, so the minion data cache goes where the
  // job cache is when that is shared (docs/cluster.md).
  if (config.cache.empty()) {
    config.cache = config.cluster_backend == "etcd" && config.master_job_cache == kJobCachePostgres
                       ? kCachePostgres
                       : kCacheLocalfs;
  }
  Validate(reader, config);
  ReadApiKeys(reader);
  reader.WarnUnknownKeys(&internal::DescribeUnreadMasterKey);
  HALITE_RETURN_IF_ERROR(ProblemsToStatus(reader.problems()));
  Derive(reader, config);
  config.source = root;
  return Loaded<MasterConfig>{std::move(config), std::move(reader.warnings())};
}

Result<Loaded<MasterConfig>> ParseMasterConfig(std::string_view yaml_text) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(yaml_text));
  return MasterConfigFromYaml(root);
}

Result<Loaded<MasterConfig>> LoadMasterConfig(const std::filesystem::path& path) {
  std::vector<std::string> include_warnings;
  HALITE_ASSIGN_OR_RETURN(YAML::Node root,
                          LoadYamlFileWithIncludes(path, "master.d/*.conf", include_warnings));
  HALITE_ASSIGN_OR_RETURN(Loaded<MasterConfig> loaded, MasterConfigFromYaml(root));
  loaded.warnings.insert(loaded.warnings.begin(), include_warnings.begin(), include_warnings.end());
  // Salt's gpg renderer defaults its keydir to <config_dir>/gpgkeys.
  if (loaded.config.gpg_keydir.empty()) {
    loaded.config.gpg_keydir =
        (std::filesystem::absolute(path).parent_path() / "gpgkeys").lexically_normal().string();
  }
  return loaded;
}

}  // namespace halite::config
