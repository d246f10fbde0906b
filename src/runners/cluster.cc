// cluster.*: halite's own runners. cluster.status asks the running master for its peer links;
// the others need no master: with cluster_backend etcd they read (and, cluster.leave, write)
// etcd themselves, so they work on any host with the master's config; with files the masters
// of cluster.haproxy_config are this one and its cluster_peers.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "halite/cluster/cluster_aes.h"
#include "halite/cluster/etcd_client.h"
#include "halite/cluster/haproxy_config.h"
#include "halite/cluster/haproxy_runtime.h"
#include "halite/cluster/membership.h"
#include "halite/cluster/shared_state.h"
#include "halite/keys/fs_key_store.h"
#include "halite/stores/stores.h"
#include "halite/wire/event.h"
#include "internal.h"

namespace halite::runners {

namespace {

using wire::Value;

Result<std::unique_ptr<cluster::EtcdClient>> Etcd(const config::MasterConfig& cfg) {
  if (cfg.cluster_backend != "etcd") {
    return Error::FailedPrecondition("cluster_backend is '" + cfg.cluster_backend +
                                     "': members are in etcd only with cluster_backend: etcd");
  }
  return cluster::MakeEtcdClient(stores::EtcdOptionsFor(cfg));
}

Result<std::vector<cluster::MemberRecord>> LiveMembers(const config::MasterConfig& cfg) {
  HALITE_ASSIGN_OR_RETURN(auto etcd, Etcd(cfg));
  auto members = cluster::ReadMembers(*etcd, cfg.etcd_prefix);
  if (!members.ok()) {
    return Error{members.error().code, "coordination unavailable: " + members.error().message};
  }
  return members;
}

Result<RunnerResult> Members(RunnerEnv& env, const BoundArgs&) {
  HALITE_ASSIGN_OR_RETURN(auto members, LiveMembers(*env.config));
  wire::Map out;
  for (const cluster::MemberRecord& m : members) {
    out.emplace_back(Value(m.name),
                     Value::MapOf({{"address", m.address},
                                   {"peer_port", m.peer_port},
                                   {"publish_port", m.publish_port},
                                   {"ret_port", m.ret_port},
                                   {"health_port", m.health_port},
                                   {"version", m.version},
                                   {"started", wire::IsoStamp(std::chrono::system_clock::time_point(
                                                   std::chrono::seconds(m.started)))},
                                   {"self", m.name == env.config->id}}));
  }
  return RunnerResult{Value(std::move(out)), ""};
}

Result<RunnerResult> Leave(RunnerEnv& env, const BoundArgs& a) {
  const config::MasterConfig& cfg = *env.config;
  const std::string name = a.Text("name");
  auto timeout_value = a.Get("timeout").int64();
  if (!timeout_value || *timeout_value < 0 || *timeout_value > 86400) {
    return Error::InvalidArgument("timeout must be a number of seconds (0 to 86400)");
  }
  const std::chrono::seconds timeout(*timeout_value);
  HALITE_ASSIGN_OR_RETURN(auto etcd, Etcd(cfg));
  auto is_member = [&]() -> Result<bool> {
    auto members = cluster::ReadMembers(*etcd, cfg.etcd_prefix);
    if (!members.ok()) return members.error();
    return std::any_of(members->begin(), members->end(),
                       [&](const cluster::MemberRecord& m) { return m.name == name; });
  };
  HALITE_ASSIGN_OR_RETURN(bool member, is_member());
  if (!member) return Error::NotFound("'" + name + "' is not a member of the cluster");
  const auto start = std::chrono::steady_clock::now();
  cluster::LeaveRequest request;
  request.drain_timeout = timeout;
  request.requested_by = cfg.id;
  request.requested_at = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  HALITE_RETURN_IF_ERROR(cluster::RequestLeave(*etcd, cfg.etcd_prefix, name, request));
  if (env.progress) {
    env.progress(name + " is draining (up to " + std::to_string(timeout.count()) +
                 " s), then it deregisters");
  }
  // It sees the request within a second, drains for up to `timeout`, then revokes its lease.
  const auto deadline = start + timeout + std::chrono::seconds(30);
  for (;;) {
    auto still = is_member();
    if (still.ok() && !*still) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return Error::DeadlineExceeded(name + " has not left after " +
                                     std::to_string((timeout + std::chrono::seconds(30)).count()) +
                                     " s: is it running? (its log says why)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return RunnerResult{Value::MapOf({{"name", name}, {"left", true}, {"seconds", took}}), ""};
}

// The masters HAProxy should send minions to: the live members (etcd), or this master and
// its cluster_peers (files).
Result<std::vector<cluster::HaproxyMaster>> HaproxyMasters(const config::MasterConfig& cfg) {
  std::vector<cluster::HaproxyMaster> out;
  if (cfg.cluster_backend == "etcd") {
    HALITE_ASSIGN_OR_RETURN(auto members, LiveMembers(cfg));
    for (const auto& m : members) {
      out.push_back({m.name, m.address, m.publish_port, m.ret_port, m.health_port});
    }
    return out;
  }
  out.push_back({cfg.id, cfg.id});
  for (const auto& peer : cfg.cluster_peers) out.push_back({peer, peer});
  return out;
}

// One sync of the running HAProxy behind `socket` with the masters; its report.
Result<Value> SyncOnce(const config::MasterConfig& cfg, const std::string& socket) {
  cluster::HaproxyOptions h;
  h.publish_port = cfg.publish_port;
  h.ret_port = cfg.ret_port;
  h.health_port = cfg.health_port;
  HALITE_ASSIGN_OR_RETURN(h.masters, HaproxyMasters(cfg));
  auto runtime = cluster::MakeHaproxySocket(socket);
  HALITE_ASSIGN_OR_RETURN(cluster::HaproxySyncReport report,
                          cluster::SyncHaproxyServers(*runtime, h));
  wire::Array members;
  for (const auto& m : h.masters) members.emplace_back(m.id);
  return Value::MapOf({{"members", Value(std::move(members))},
                       {"added", internal::StrList(report.added)},
                       {"updated", internal::StrList(report.updated)},
                       {"enabled", internal::StrList(report.enabled)},
                       {"removed", internal::StrList(report.removed)},
                       {"draining", internal::StrList(report.draining)}});
}

bool Changed(const Value& report) {
  for (const char* key : {"added", "updated", "enabled", "removed", "draining"}) {
    const Value* list = report.Find(key);
    if (list != nullptr && list->is_array() && !list->array()->empty()) return true;
  }
  return false;
}

// follow=True: syncs, then again whenever the member list changes (a /v3/watch of
// <prefix>members/ with cluster_backend etcd) and every `interval` whatever happened (a
// HAProxy reloaded from its file has lost the servers added at runtime; a draining server is
// deleted once idle). Prints a JSON line for each sync that changed something or failed;
// runs until it is stopped (a service: packaging's halite-haproxy-sync.service).
// `etcd`: null with cluster_backend files (no watch: the interval alone).
[[noreturn]] void Follow(const config::MasterConfig& cfg, const std::string& socket,
                         std::chrono::seconds interval, std::unique_ptr<cluster::EtcdClient> etcd) {
  const std::string members = cfg.etcd_prefix + "members/";
  std::int64_t next = 0;  // the revision the watch starts at; 0: read one first
  std::string last_error;
  for (;;) {
    if (etcd && next == 0) {
      if (auto range = etcd->RangePrefixAt(members); range.ok()) next = range->revision + 1;
    }
    auto report = SyncOnce(cfg, socket);
    if (!report.ok()) {
      if (report.error().message != last_error) {
        std::printf("%s\n",
                    Value::MapOf({{"error", Value(report.error().message)}}).ToJson().c_str());
      }
      last_error = report.error().message;
    } else {
      if (Changed(*report) || !last_error.empty()) std::printf("%s\n", report->ToJson().c_str());
      last_error.clear();
    }
    std::fflush(stdout);
    const auto deadline = std::chrono::steady_clock::now() + interval;
    if (etcd && next != 0) {
      auto batch = etcd->WatchPrefix(members, next, interval);
      if (batch.ok() && !batch->compacted) {
        next = batch->next_revision;
        continue;  // a change (sync now) or the interval (the periodic sync)
      }
      next = 0;
    }
    std::this_thread::sleep_until(deadline);
  }
}

Result<RunnerResult> HaproxySync(RunnerEnv& env, const BoundArgs& a) {
  const config::MasterConfig& cfg = *env.config;
  const std::string socket = a.Text("socket");
  if (socket.empty()) return Error::InvalidArgument("socket=PATH (HAProxy's admin socket)");
  if (a.Truthy("follow")) {
    auto interval = a.Get("interval").int64();
    if (!interval || *interval <= 0) {
      return Error::InvalidArgument("interval must be a positive number of seconds");
    }
    std::unique_ptr<cluster::EtcdClient> etcd;
    if (cfg.cluster_backend == "etcd") {
      HALITE_ASSIGN_OR_RETURN(etcd, Etcd(cfg));
    }
    Follow(cfg, socket, std::chrono::seconds(*interval), std::move(etcd));
  }
  HALITE_ASSIGN_OR_RETURN(Value report, SyncOnce(cfg, socket));
  return RunnerResult{std::move(report), ""};
}

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
  HALITE_ASSIGN_OR_RETURN(h.masters, HaproxyMasters(cfg));
  return RunnerResult{Value(cluster::RenderHaproxyConfig(h)), "raw_text"};
}

// Moves what a shared-folder cluster keeps that etcd now holds (minion keys in every state,
// the cluster AES key, the cluster key pair) into etcd, without re-keying a minion: keys are copied
// verbatim, the AES key is adopted only when etcd has none. Never overwrites: an id whose key in
// etcd differs is listed under conflicts. Running it again imports nothing twice.
Result<RunnerResult> ImportToEtcd(RunnerEnv& env, const BoundArgs&) {
  const config::MasterConfig& cfg = *env.config;
  if (cfg.cluster_backend != "etcd") {
    return Error::FailedPrecondition(
        "cluster.import_to_etcd: set cluster_backend: etcd and etcd_endpoints first (the "
        "folder to import from is cluster_pki_dir)");
  }
  const std::filesystem::path pki = stores::SharedPkiDir(cfg);
  std::error_code ec;
  if (!std::filesystem::is_directory(pki / keys::KeyStateDir(keys::KeyState::kAccepted), ec)) {
    return Error::NotFound("cluster.import_to_etcd: no keys to import under " + pki.string());
  }
  HALITE_ASSIGN_OR_RETURN(auto from, keys::FsKeyStore::Open(pki));
  HALITE_ASSIGN_OR_RETURN(auto into, stores::OpenMinionKeys(cfg));
  Value imported = Value::EmptyMap();
  wire::Array conflicts;
  std::int64_t already = 0;
  for (keys::KeyState state : {keys::KeyState::kAccepted, keys::KeyState::kPending,
                               keys::KeyState::kRejected, keys::KeyState::kDenied}) {
    HALITE_ASSIGN_OR_RETURN(std::vector<std::string> ids, from->List(state));
    std::int64_t n = 0;
    for (const std::string& id : ids) {
      HALITE_ASSIGN_OR_RETURN(std::string pem, from->Read(state, id));
      auto there = into->Read(state, id);
      if (there.ok()) {
        if (*there == pem) {
          ++already;
        } else {
          conflicts.emplace_back(std::string(keys::KeyStateDir(state)) + "/" + id);
        }
        continue;
      }
      if (there.error().code != ErrorCode::kNotFound) return there.error();
      HALITE_RETURN_IF_ERROR(into->Write(state, id, pem));
      ++n;
    }
    imported.Set(std::string(keys::KeyStateDir(state)), Value(n));
  }
  std::string aes = "none in the folder";
  if (auto key = cluster::ReadClusterAes(pki); key.ok()) {
    HALITE_ASSIGN_OR_RETURN(auto store, stores::OpenClusterAes(cfg));
    HALITE_ASSIGN_OR_RETURN(bool adopted, store->Adopt(*key));
    if (adopted) {
      aes = "imported";
    } else {
      HALITE_ASSIGN_OR_RETURN(cluster::ClusterAesKey current, store->Read());
      aes = current.key == *key ? "already in etcd"
                                : "etcd holds another key: kept (minions sign in again once)";
    }
  } else if (key.error().code != ErrorCode::kNotFound) {
    return key.error();
  }
  // The pair minions pinned as the master's: the one thing that must not change.
  std::string keypair = "none in the folder";
  if (auto pair = cluster::MakeFileClusterKeyPair(pki)->Read(); pair.ok()) {
    HALITE_ASSIGN_OR_RETURN(auto store, stores::OpenClusterKeyPair(cfg));
    HALITE_ASSIGN_OR_RETURN(bool adopted, store->Adopt(*pair));
    if (adopted) {
      keypair = "imported";
    } else {
      HALITE_ASSIGN_OR_RETURN(cluster::ClusterKeyPair current, store->Read());
      if (current.key.ToPem() == pair->key.ToPem()) {
        keypair = "already in etcd";
      } else {
        keypair = "etcd holds another pair: kept";
        conflicts.emplace_back(store->Where());
      }
    }
  } else if (pair.error().code != ErrorCode::kNotFound) {
    return pair.error();
  }
  return RunnerResult{Value::MapOf({{"minion_keys", std::move(imported)},
                                    {"already_in_etcd", Value(already)},
                                    {"conflicts", Value(std::move(conflicts))},
                                    {"aes", Value(aes)},
                                    {"cluster_keypair", Value(keypair)}}),
                      ""};
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
    An HAProxy configuration for this cluster's masters (the live members in etcd with
    cluster_backend etcd; this one and cluster_peers otherwise), on stdout. bind: the address HAProxy listens on; maxconn; stats_socket: a path.

    CLI Example:

        halite-run cluster.haproxy_config bind=10.0.0.1 > /etc/haproxy/haproxy.cfg
    )",
             HaproxyConfig});
  table.Add({"cluster.members",
             {},
             false,
             R"(
    The live members of the cluster as registered in etcd (cluster_backend: etcd): name,
    address, ports, version, start time, and self: True for this master.

    CLI Example:

        halite-run cluster.members
    )",
             Members});
  table.Add({"cluster.leave",
             {{"name", std::nullopt}, {"timeout", Value(60)}},
             false,
             R"(
    Takes master NAME out of the cluster (cluster_backend: etcd): its /health answers 503
    (leaving) so HAProxy moves its minions away and it takes no new sign-ins; once no minion
    is connected, or after timeout seconds (default 60), it deregisters and the others close
    their links. Waits until it has left. Run it on any master.

    CLI Example:

        halite-run cluster.leave m3 timeout=120
    )",
             Leave});
  table.Add({"cluster.import_to_etcd",
             {},
             false,
             R"(
    Moves a shared-folder cluster into etcd (run once, with cluster_backend: etcd and
    etcd_endpoints set and cluster_pki_dir still pointing at the shared folder): minion keys
    in every state, the cluster AES key and the cluster key pair, verbatim, so no minion is
    re-keyed. Never overwrites what etcd holds; conflicts are listed. Safe to run again.

    CLI Example:

        halite-run cluster.import_to_etcd
    )",
             ImportToEtcd});
  table.Add({"cluster.haproxy_sync",
             {{"socket", std::nullopt}, {"follow", Value(false)}, {"interval", Value(10)}},
             false,
             R"(
    Makes a running HAProxy (its admin socket; the config from cluster.haproxy_config) serve
    exactly the live members, without a reload: adds joined masters, deletes those that
    left, re-enables members in maintenance, updates changed addresses.

    follow=True keeps doing so: again at every change of the member list (etcd) and every
    `interval` seconds, printing a JSON line per sync that changed something, until it is
    stopped (halite-haproxy-sync.service runs it so).

    CLI Example:

        halite-run cluster.haproxy_sync socket=/run/haproxy/admin.sock
        halite-run cluster.haproxy_sync socket=/run/haproxy/admin.sock follow=True
    )",
             HaproxySync});
}

}  // namespace halite::runners
