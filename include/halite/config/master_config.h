// The master's config: Salt's key names and defaults (salt-wire.md 2, 4.6, 5, 9, 10.1) plus
// halite's own keys. Parse* validates everything and reports every problem in one
// Error::InvalidArgument, one "key: what is wrong (got X)" per line; see config.h.
//
// After parsing, root_dir (when set) has been put in front of pki_dir, cachedir, sock_dir,
// log_file, autosign_file and autoreject_file, as Salt does; cluster_pki_dir is left as
// written. With cluster_id set and no cluster_pki_dir, cluster_pki_dir is pki_dir (warning).
// Thread-safety: plain data; the functions are reentrant. `job_cache` is a YAML::Node, whose
// copies share data: read it, don't modify it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/config/config.h"

namespace halite::config {

// Values accepted by master_job_cache.
inline constexpr std::string_view kJobCacheLocal = "local_cache";
inline constexpr std::string_view kJobCachePostgres = "postgres";
// Values accepted by cache (the minion data cache).
inline constexpr std::string_view kCacheLocalfs = "localfs";
inline constexpr std::string_view kCachePostgres = "postgres";

struct MasterConfig {
  // --- Identity, sockets, files. ---
  std::string id;                     // Parse*: DefaultId() when not set
  std::string interface = "0.0.0.0";  // IP literal to bind; never a host name
  std::uint16_t publish_port = 4505;
  std::uint16_t ret_port = 4506;
  std::string root_dir;  // empty: none
  std::string pki_dir = "/etc/salt/pki/master";
  std::string cachedir = "/var/cache/salt/master";
  std::string sock_dir = "/var/run/salt/master";
  std::string log_file;               // empty: stderr
  std::string log_level = "warning";  // Salt's names, see ParseLogLevel
  std::string user = "root";

  // --- Keys and authentication. ---
  bool auto_accept = false;
  bool open_mode = false;
  std::string autosign_file;    // empty: none
  std::string autoreject_file;  // empty: none
  std::chrono::minutes autosign_timeout{120};
  bool permissive_pki_access = false;
  int keysize = 2048;  // 1024..16384 bits; below 2048 warns
  // A new id's key is recorded (minions_pre, or minions_rejected by autoreject_file) only
  // while that directory holds fewer keys than this; past it the minion is answered "full".
  // Strangers can send new ids without end. 0: no limit (Salt has none).
  int max_pending_keys = 50000;
  int max_minions = 0;  // 0: no limit; else a new minion beyond this many accepted keys is "full"
  bool auth_events = true;
  bool minion_data_cache = true;
  // Where the minion data cache lives (Salt's `cache`): kCacheLocalfs (<cachedir>/minions) or
  // kCachePostgres (the job cache's database, master_job_cache: postgres). Parse* fills it
  // when unset: postgres with cluster_backend: etcd and a postgres job cache (no folder is
  // shared then), localfs otherwise.
  std::string cache;
  bool file_recv = false;        // cp.push from minions into <cachedir>/minions/<id>/files
  int file_recv_max_size = 100;  // MiB per pushed file

  // --- Workers, jobs, sessions. ---
  int worker_threads = 5;
  // 0 keeps jobs forever. The deprecated keep_jobs (hours) is used only when this is not set.
  std::chrono::seconds keep_jobs_seconds{86400};
  std::string master_job_cache{kJobCacheLocal};  // kJobCacheLocal or kJobCachePostgres
  YAML::Node job_cache{YAML::NodeType::Map};     // backend options, read by its factory
  // Salt's `job_cache: True/False` (job_cache written as a boolean, not as backend options).
  // False: as Salt, jobs are saved when published but returns only go to the event bus.
  bool store_returns = true;
  std::chrono::seconds publish_session{86400};  // session key and cluster AES key lifetime
  // A v3 request whose `ts` is further than this from our clock, in either direction, is
  // refused; within it, a nonce already seen from that minion is refused as a replay.
  // 0: neither is checked (Salt's default; halite's is 300 s).
  std::chrono::seconds request_server_ttl{300};
  std::chrono::seconds loop_interval{60};  // maintenance loop period
  bool rotate_aes_key = true;

  // --- Publisher. ---
  bool sign_pub_messages = true;
  std::string publish_signing_algorithm = "PKCS1v15-SHA1";  // or "PKCS1v15-SHA224"
  bool zmq_filtering = false;
  int pub_hwm = 1000;
  int zmq_backlog = 1000;
  bool ipv6 = false;  // must be true when `interface` is an IPv6 address
  bool tcp_keepalive = true;
  int tcp_keepalive_idle = 300;  // -1: the OS default
  int tcp_keepalive_cnt = -1;
  int tcp_keepalive_intvl = -1;

  // --- Files served to minions (absolute directories per environment). ---
  std::map<std::string, std::vector<std::string>> file_roots{{"base", {"/srv/salt"}}};
  std::map<std::string, std::vector<std::string>> pillar_roots{{"base", {"/srv/pillar"}}};

  // --- Pillar (Salt's keys and defaults; docs/pillar.md). ---
  std::string renderer = "jinja|yaml";  // pipeline for a file without a `#!` line
  std::vector<std::string> renderer_blacklist;
  std::vector<std::string> renderer_whitelist;
  std::string state_top = "top.sls";
  std::string pillar_source_merging_strategy = "smart";  // smart recurse aggregate overwrite none
  bool pillar_merge_lists = false;
  bool pillar_includes_override_sls = false;
  bool pillar_safe_render_error = true;
  std::string pillarenv;  // empty: every environment
  bool pillarenv_from_saltenv = false;
  YAML::Node jinja_env{YAML::NodeType::Map};      // Jinja Environment options (not sls)
  YAML::Node jinja_sls_env{YAML::NodeType::Map};  // ... for sls files
  bool allow_undefined = false;                   // false: StrictUndefined, as Salt
  std::string gpg_keydir;                         // LoadMasterConfig: <config_dir>/gpgkeys if unset
  // halite's own: salt['cmd.run'] in a pillar template runs a command on the master (Salt
  // allows it always; halite only when asked).
  bool pillar_allow_cmd_run = false;
  YAML::Node ext_pillar;  // Salt's list of {cmd_yaml|cmd_json|file_tree: args}; undefined: none
  bool ext_pillar_first = false;
  int render_processes = 0;                            // 0: one per core, at most 4
  std::chrono::milliseconds render_timeout_ms{10000};  // per file; the renderer is then killed
  std::uint64_t render_memory_limit = 1024ull * 1024 * 1024;  // RLIMIT_AS of a renderer
  std::uint64_t render_max_output = 16ull * 1024 * 1024;      // rendered data of one file
  std::string render_program;  // empty: halite-render next to halite-master

  std::chrono::seconds timeout{5};
  std::chrono::seconds gather_job_timeout{10};
  bool presence_events = false;
  // Salt's `nodegroups:` as words: a string definition split at whitespace, a list item by
  // item (wire::Nodegroups; expanded by wire::ExpandNodegroup).
  std::map<std::string, std::vector<std::string>> nodegroups;

  // --- Cluster (Salt 3007). ---
  std::string cluster_id;                  // empty: not a cluster
  std::vector<std::string> cluster_peers;  // the other masters, never this one's id
  std::string cluster_pki_dir;             // Parse*: pki_dir when empty and cluster_id is set
  std::uint16_t cluster_pool_port = 4520;
  // halite's: the bytes of events waiting for one peer's acknowledgement (a peer that is down
  // or slow); past it the oldest are dropped and counted. Return events carry whole returns.
  std::int64_t cluster_event_backlog_bytes = 256 << 20;
  // halite's: where the cluster's membership lives. "files": cluster_peers (by address) and
  // CURVE keys in cluster_pki_dir/peers. "etcd": members register in etcd (docs/cluster.md,
  // "etcd membership"); cluster_peers is not read and ids are names.
  std::string cluster_backend = "files";
  std::vector<std::string> etcd_endpoints;  // "http://<IP>:2379" or "https://<IP>:2379", not mixed
  std::string etcd_prefix = "/halite/";     // starts and ends with '/'
  // https endpoints: PEM files of the CA (system's if empty), client cert and key (or neither)
  std::string etcd_cert;
  std::string etcd_key;
  std::string etcd_cacert;

  // --- halite's own. ---
  std::uint16_t health_port = 4510;                     // 0: disabled
  std::uint64_t max_request_bytes = 100 * 1024 * 1024;  // larger request frames are rejected
  // An `_auth` that waited longer than this for a worker is dropped unanswered: its minion has
  // timed out (Salt's auth_timeout is 5 s) and sent it again, so the RSA work would be wasted
  // and would feed a retry storm. 0: never dropped.
  std::chrono::milliseconds auth_queue_timeout_ms{4000};
  // The answer to an `_auth` that waited at least this long for a worker is kept for 60 s, so
  // that its minion's retry of the same request (sent when the answer came too late) is
  // answered again without RSA work (master/auth_replies.h). -1: never kept.
  std::chrono::milliseconds auth_reply_cache_wait_ms{1000};
  // Requests older than this protocol version are refused (2 refuses v0/v1; 3 refuses v2).
  int minimum_request_version = 2;
  // v2 requests are encrypted with the AES key every minion shares, so a v2 command that acts
  // as a minion (_return, _pillar, _mine*, _minion_event, ...) must carry a `tok` that verifies
  // against that minion's key. Stock v2 minions (3006.10 and older, 3007.0) sign only _minion_event
  // and _mine*; True accepts their unsigned _return and _pillar as Salt does (insecure).
  bool allow_unsigned_v2_requests = false;
  // Salt's master-side mine ACL: minion id regex -> mine function regexes it may read. Unset
  // (has_mine_get false): every function is readable, subject to the minion-side allow_tgt.
  bool has_mine_get = false;
  std::map<std::string, std::vector<std::string>> mine_get;
  // Salt's `peer:` (minion id regex -> function regexes it may publish with publish.publish)
  // and `peer_run:` (-> runner regexes it may run with publish.runner). Empty: refused.
  std::map<std::string, std::vector<std::string>> peer;
  std::map<std::string, std::vector<std::string>> peer_run;
  // Minion events: at most this many per _minion_event request, and per minion a token bucket
  // of `minion_events_burst` refilled at `minion_events_per_second`. Excess events are dropped
  // and counted (halite_events_rejected_total).
  int max_events_per_request = 1000;
  // Salt's max_event_size: a minion event whose data packs to more than this has its large
  // values replaced by "VALUE_TRIMMED", as Salt does; one still over is dropped and counted.
  int max_event_size = 1048576;
  // A minion's mine, all functions together (packed): a `_mine` that would take it past this
  // is refused (answered false, counted). Salt has no limit; entries merge across requests,
  // so without one a minion's mine grew without end (docs/security.md, finding 28). 0: none.
  std::int64_t mine_max_bytes = 4 << 20;
  int minion_events_per_second = 100;
  int minion_events_burst = 2000;
  // One minion's share of the workers: at most this many of its requests are handled at once;
  // the others wait in its own queue (at most minion_requests_waiting; beyond that a request is
  // dropped unanswered and counted in halite_minion_requests_dropped_total), so a minion that
  // pipelines slow requests cannot hold every worker and queue the others behind its own.
  int minion_requests_running = 2;
  int minion_requests_waiting = 128;
  // Requests waiting for a worker: beyond either bound, a new request is dropped unanswered
  // (its minion retries) and counted (halite_requests_shed_total).
  int request_queue_max = 20000;
  std::uint64_t request_queue_max_bytes = 1024ull * 1024 * 1024;
  int return_batch_max = 512;                             // job returns per group commit
  std::chrono::milliseconds return_fsync_interval_ms{0};  // group commit wait; 0: none
  // Re-publish the jobs still within their timeout (the publish's "to", else `timeout`) when
  // minions subscribe, so that a minion that moved between masters still gets them
  // (docs/failure-modes.md). False: a publish goes out once, as in Salt.
  bool publish_replay = true;
  // Added to each job's replay window: a frozen or cut-off master's minions come back after
  // HAProxy's detection and their reconnect, which can outlast a short timeout. The replay
  // leaves out minions that returned, so the longer window cannot re-run a finished job.
  std::chrono::seconds publish_replay_grace{30};

  // The document this was parsed from (includes merged; null for all defaults): what a reload
  // compares key by key (daemon/reload.h).
  YAML::Node source;
};

// Parses and validates master config YAML. An empty document means all defaults; a top level
// that is not a map is an error. Unknown keys become warnings.
Result<Loaded<MasterConfig>> ParseMasterConfig(std::string_view yaml_text);
// ParseMasterConfig on a file's contents, with Salt's `default_include` (master.d/*.conf next
// to the file) and `include:` merged in (LoadYamlFileWithIncludes); their warnings come first.
// Error::NotFound when the file does not exist.
// Malformed YAML errors name the file; validation problems are the same lines as Parse gives.
Result<Loaded<MasterConfig>> LoadMasterConfig(const std::filesystem::path& path);
// The same for a node that was already parsed (null means all defaults).
Result<Loaded<MasterConfig>> MasterConfigFromYaml(const YAML::Node& root);

}  // namespace halite::config
