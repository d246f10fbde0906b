#include "salt_master_keys.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace halite::config::internal {
namespace {

// Every master setting of Salt 3006 and 3007 (DEFAULT_MASTER_OPTS and conf/master) that
// halite-master does not read, as a name or a family ("gitfs_": every key starting with it,
// "*niceness": every key ending with it). Sorted by name; exact names win over families.
constexpr SaltMasterKey kSaltMasterKeys[] = {
    {"allow_minion_key_revoke", SaltKeySupport::kNotSupported, "false",
     "saltutil.revoke_auth from a minion is not acted on; remove keys with halite-key -d"},
    {"archive_jobs", SaltKeySupport::kNotSupported, "",
     "old jobs are deleted after keep_jobs_seconds, not archived"},
    {"auth_mode", SaltKeySupport::kIgnored, "",
     "every local publish needs its key (root's, a publisher_acl user's or an eauth token)"},
    {"autosign_grains_dir", SaltKeySupport::kNotSupported, "",
     "keys are not auto-signed by grains (autosign_file and auto_accept are)"},
    {"azurefs_", SaltKeySupport::kNotSupported, "",
     "only the roots backend (file_roots) is served"},
    {"batch_safe_limit", SaltKeySupport::kNotSupported, "", "no automatic batching"},
    {"batch_safe_size", SaltKeySupport::kNotSupported, "", "no automatic batching"},
    {"cache_sreqs", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"clean_dynamic_modules", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"cli_summary", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"client_acl_verify", SaltKeySupport::kIgnored, "",
     "used only with external_auth and publisher_acl, which halite does not have"},
    {"cluster_key_pass", SaltKeySupport::kNotSupported, "",
     "an encrypted master key cannot be read; halite-master stops with an error"},
    {"cluster_mode", SaltKeySupport::kNotSupported, "",
     "halite's clusters are set up with cluster_id, cluster_peers and cluster_pki_dir "
     "(docs/cluster.md)"},
    {"color", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"con_cache", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"conf_file", SaltKeySupport::kIgnored, "", "set by Salt's own programs, not by operators"},
    {"cython_enable", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"decrypt_pillar", SaltKeySupport::kNotSupported, "", "no decryption of pillar values"},
    {"decrypt_pillar_", SaltKeySupport::kNotSupported, "", "no decryption of pillar values"},
    {"default_top", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"detect_remote_minions", SaltKeySupport::kIgnored, "",
     "manage.status asks the minions themselves"},
    {"discovery", SaltKeySupport::kNotSupported, "", "no master discovery"},
    {"django_auth_", SaltKeySupport::kNotSupported, "",
     "no eauth or publisher ACLs: halite, halite-key and halite-run reach the master through "
     "sock_dir, which only the master's user may open"},
    {"drop_messages_signature_fail", SaltKeySupport::kIgnored, "",
     "halite checks every request's signature itself (minimum_request_version, "
     "allow_unsigned_v2_requests; docs/security.md)"},
    {"dummy_pub", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"eauth_acl_module", SaltKeySupport::kNotSupported, "",
     "halite-api's eauth does not have it (docs/api.md: external_auth, token_expire, "
     "token_dir, permissive_acl are read)"},
    {"eauth_tokens", SaltKeySupport::kNotSupported, "",
     "halite-api's eauth does not have it (docs/api.md: external_auth, token_expire, "
     "token_dir, permissive_acl are read)"},
    {"enable_gpu_grains", SaltKeySupport::kIgnored, "",
     "halite-master computes no grains of its own"},
    {"enable_ssh_minions", SaltKeySupport::kNotSupported, "false", "no salt-ssh"},
    {"enforce_mine_cache", SaltKeySupport::kIgnored, "",
     "the mine is always kept in cachedir/minions"},
    {"engines", SaltKeySupport::kNotSupported, "", "no engines"},
    {"env_order", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"event_match_type", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"event_return", SaltKeySupport::kNotSupported, "",
     "no master-side returners: returns go to the job cache (master_job_cache)"},
    {"event_return_", SaltKeySupport::kNotSupported, "",
     "no master-side returners: returns go to the job cache (master_job_cache)"},
    {"ext_job_cache", SaltKeySupport::kNotSupported, "",
     "no master-side returners: returns go to the job cache (master_job_cache)"},
    {"extension_modules", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"external_auth", SaltKeySupport::kNotSupported, "",
     "no eauth or publisher ACLs: halite, halite-key and halite-run reach the master through "
     "sock_dir, which only the master's user may open"},
    {"extmod_blacklist", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"extmod_whitelist", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"failhard", SaltKeySupport::kIgnored, "", "states run on the minions with their own settings"},
    {"features", SaltKeySupport::kIgnored, "", "set by Salt's own programs, not by operators"},
    {"file_buffer_size", SaltKeySupport::kIgnored, "", "a minion-side setting"},
    {"file_client", SaltKeySupport::kIgnored, "", "a minion-side setting"},
    {"file_ignore_glob", SaltKeySupport::kNotSupported, "",
     "every file under file_roots is served, matching files too"},
    {"file_ignore_regex", SaltKeySupport::kNotSupported, "",
     "every file under file_roots is served, matching files too"},
    {"fileserver_backend", SaltKeySupport::kNotSupported, "roots",
     "only the roots backend (file_roots) is served"},
    {"fileserver_events", SaltKeySupport::kNotSupported, "", "no fileserver events"},
    {"fileserver_followsymlinks", SaltKeySupport::kNotSupported, "",
     "symlinks that stay inside file_roots are served, others are not"},
    {"fileserver_ignoresymlinks", SaltKeySupport::kNotSupported, "",
     "symlinks that stay inside file_roots are served, others are not"},
    {"fileserver_interval", SaltKeySupport::kIgnored, "",
     "halite-master's maintenance runs every loop_interval; file_roots are read on each request"},
    {"fileserver_verify_config", SaltKeySupport::kIgnored, "",
     "the roots backend needs no verification"},
    {"fips_mode", SaltKeySupport::kNotSupported, "false", "no FIPS mode"},
    {"git_pillar_", SaltKeySupport::kNotSupported, "",
     "no git pillar (ext_pillar supports cmd_yaml, cmd_json and file_tree; docs/pillar.md)"},
    {"gitfs_", SaltKeySupport::kNotSupported, "", "only the roots backend (file_roots) is served"},
    {"gpg_cache", SaltKeySupport::kNotSupported, "",
     "no gpg cache and no pass renderer (docs/pillar.md)"},
    {"gpg_cache_", SaltKeySupport::kNotSupported, "",
     "no gpg cache and no pass renderer (docs/pillar.md)"},
    {"gpg_decrypt_must_succeed", SaltKeySupport::kNotSupported, "",
     "no gpg cache and no pass renderer (docs/pillar.md)"},
    {"hash_type", SaltKeySupport::kNotSupported, "sha256",
     "file hashes and job cache directories use sha256"},
    {"hgfs_", SaltKeySupport::kNotSupported, "", "only the roots backend (file_roots) is served"},
    {"http_connect_timeout", SaltKeySupport::kIgnored, "", "halite-master makes no HTTP requests"},
    {"http_max_body", SaltKeySupport::kIgnored, "", "halite-master makes no HTTP requests"},
    {"http_request_timeout", SaltKeySupport::kIgnored, "", "halite-master makes no HTTP requests"},
    {"ipc_mode", SaltKeySupport::kNotSupported, "ipc",
     "local sockets are always ipc:// in sock_dir"},
    {"ipc_write_buffer", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"jinja_lstrip_blocks", SaltKeySupport::kNotSupported, "false",
     "set trim_blocks / lstrip_blocks in jinja_env and jinja_sls_env"},
    {"jinja_trim_blocks", SaltKeySupport::kNotSupported, "false",
     "set trim_blocks / lstrip_blocks in jinja_env and jinja_sls_env"},
    {"job_cache_store_endtime", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"keep_acl_in_token", SaltKeySupport::kNotSupported, "",
     "halite-api's eauth does not have it (docs/api.md: external_auth, token_expire, "
     "token_dir, permissive_acl are read)"},
    {"key_cache", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"key_logfile", SaltKeySupport::kIgnored, "",
     "halite writes no separate key log; key changes are logged in log_file"},
    {"key_pass", SaltKeySupport::kNotSupported, "",
     "an encrypted master key cannot be read; halite-master stops with an error"},
    {"local", SaltKeySupport::kIgnored, "", "set by Salt's own programs, not by operators"},
    {"lock_saltenv", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"log_", SaltKeySupport::kIgnored, "",
     "halite-master has one log (log_file) at one level (log_level) in its own format"},
    {"maintenance_interval", SaltKeySupport::kIgnored, "",
     "halite-master's maintenance runs every loop_interval; file_roots are read on each request"},
    {"master_pubkey_signature", SaltKeySupport::kNotSupported, "",
     "the master's public key is not signed with a signing key"},
    {"master_roots", SaltKeySupport::kIgnored, "", "runners read no states"},
    {"master_sign_key_name", SaltKeySupport::kNotSupported, "",
     "the master's public key is not signed with a signing key"},
    {"master_sign_pubkey", SaltKeySupport::kNotSupported, "false",
     "the master's public key is not signed with a signing key"},
    {"master_stats", SaltKeySupport::kNotSupported, "",
     "no master stats events; see the /metrics endpoint on health_port"},
    {"master_stats_event_iter", SaltKeySupport::kNotSupported, "",
     "no master stats events; see the /metrics endpoint on health_port"},
    {"master_tops", SaltKeySupport::kNotSupported, "", "no master_tops: the top file decides"},
    {"master_tops_first", SaltKeySupport::kNotSupported, "",
     "no master_tops: the top file decides"},
    {"master_use_pubkey_signature", SaltKeySupport::kNotSupported, "false",
     "the master's public key is not signed with a signing key"},
    {"max_open_files", SaltKeySupport::kIgnored, "",
     "halite-master raises its open-file limit to the hard limit (LimitNOFILE= under systemd)"},
    {"memcache_", SaltKeySupport::kIgnored, "", "an internal cache of salt-master"},
    {"min_extra_mods", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"minion_data_cache_events", SaltKeySupport::kNotSupported, "",
     "no events for minion data cache changes"},
    {"minionfs_", SaltKeySupport::kNotSupported, "",
     "only the roots backend (file_roots) is served"},
    {"module_dirs", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"netapi_", SaltKeySupport::kNotSupported, "",
     "halite-api reads netapi_enable_clients only (docs/api.md)"},
    {"*niceness", SaltKeySupport::kIgnored, "", "halite-master runs no worker processes to renice"},
    {"on_demand_ext_pillar", SaltKeySupport::kNotSupported, "",
     "ext_pillar supports cmd_yaml, cmd_json and file_tree only (docs/pillar.md)"},
    {"optimization_order", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"order_masters", SaltKeySupport::kNotSupported, "false", "no syndics"},
    {"output", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"output_file", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"outputter_dirs", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"pass_", SaltKeySupport::kNotSupported, "",
     "no gpg cache and no pass renderer (docs/pillar.md)"},
    {"permissive_acl", SaltKeySupport::kNotSupported, "",
     "no eauth or publisher ACLs: halite, halite-key and halite-run reach the master through "
     "sock_dir, which only the master's user may open"},
    {"pidfile", SaltKeySupport::kIgnored, "",
     "halite-master writes no pid file (systemd tracks the process)"},
    {"pillar_cache", SaltKeySupport::kNotSupported, "false",
     "pillar is compiled on every request, never cached"},
    {"pillar_cache_backend", SaltKeySupport::kIgnored, "", "used only with pillar_cache: True"},
    {"pillar_cache_ttl", SaltKeySupport::kIgnored, "", "used only with pillar_cache: True"},
    {"pillar_gitfs_ssl_verify", SaltKeySupport::kNotSupported, "",
     "no git pillar (ext_pillar supports cmd_yaml, cmd_json and file_tree; docs/pillar.md)"},
    {"pillar_opts", SaltKeySupport::kNotSupported, "false",
     "the master's options are never put in pillar"},
    {"pillar_raise_on_missing", SaltKeySupport::kIgnored, "", "a minion-side pillar setting"},
    {"pillar_version", SaltKeySupport::kIgnored, "", "a minion-side pillar setting"},
    {"ping_on_rotate", SaltKeySupport::kNotSupported, "false",
     "minions are not pinged after an AES key rotation"},
    {"preserve_minion_cache", SaltKeySupport::kIgnored, "",
     "halite-key -d removes the minion's cached data with its key"},
    {"publisher_acl", SaltKeySupport::kNotSupported, "",
     "no eauth or publisher ACLs: halite, halite-key and halite-run reach the master through "
     "sock_dir, which only the master's user may open"},
    {"publisher_acl_blacklist", SaltKeySupport::kNotSupported, "",
     "no eauth or publisher ACLs: halite, halite-key and halite-run reach the master through "
     "sock_dir, which only the master's user may open"},
    {"queue_dirs", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"range_server", SaltKeySupport::kNotSupported, "", "no range targeting (-R)"},
    {"reactor", SaltKeySupport::kNotSupported, "",
     "no reactor: events reach the event bus and nothing acts on them"},
    {"reactor_", SaltKeySupport::kNotSupported, "",
     "no reactor: events reach the event bus and nothing acts on them"},
    {"regen_thin", SaltKeySupport::kNotSupported, "", "no salt-ssh"},
    {"remote_minions_port", SaltKeySupport::kIgnored, "",
     "manage.status asks the minions themselves"},
    {"request_server_aes_session", SaltKeySupport::kIgnored, "",
     "halite checks every request's signature itself (minimum_request_version, "
     "allow_unsigned_v2_requests; docs/security.md)"},
    {"require_minion_sign_messages", SaltKeySupport::kIgnored, "",
     "halite checks every request's signature itself (minimum_request_version, "
     "allow_unsigned_v2_requests; docs/security.md)"},
    {"return", SaltKeySupport::kNotSupported, "", "no master-side returners"},
    {"roots_update_interval", SaltKeySupport::kIgnored, "",
     "halite-master's maintenance runs every loop_interval; file_roots are read on each request"},
    {"roster", SaltKeySupport::kNotSupported, "", "no salt-ssh"},
    {"roster_", SaltKeySupport::kNotSupported, "", "no salt-ssh"},
    {"rosters", SaltKeySupport::kNotSupported, "", "no salt-ssh"},
    {"runner_dirs", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"runner_returns", SaltKeySupport::kIgnored, "", "halite-run keeps no runner jobs"},
    {"s3fs_", SaltKeySupport::kNotSupported, "", "only the roots backend (file_roots) is served"},
    {"salt_cp_chunk_size", SaltKeySupport::kIgnored, "", "a minion-side setting"},
    {"saltenv", SaltKeySupport::kIgnored, "", "states run on the minions with their own settings"},
    {"schedule", SaltKeySupport::kNotSupported, "",
     "no master-side scheduler (minions' own schedules still run)"},
    {"search", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"serial", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"show_jid", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"show_timeout", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"signing_key_pass", SaltKeySupport::kNotSupported, "",
     "an encrypted master key cannot be read; halite-master stops with an error"},
    {"sock_pool_size", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"sqlite_queue_dir", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"ssh_", SaltKeySupport::kNotSupported, "", "no salt-ssh"},
    {"ssl", SaltKeySupport::kNotSupported, "",
     "no TLS on the minion ports (Salt's AES and RSA protect them, as with stock Salt without "
     "ssl)"},
    {"state_aggregate", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"state_auto_order", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"state_compress_ids", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"state_events", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"state_output", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"state_output_diff", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"state_output_pct", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"state_output_profile", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"state_top_saltenv", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"state_verbose", SaltKeySupport::kIgnored, "",
     "CLI output: give halite its --out, --show-jid, ... options instead (docs/cli.md)"},
    {"sudo_acl", SaltKeySupport::kNotSupported, "",
     "sudo_<user> publishes are not recognised: run halite as root, or as a user named in "
     "publisher_acl"},
    {"svnfs_", SaltKeySupport::kNotSupported, "", "only the roots backend (file_roots) is served"},
    {"syndic_", SaltKeySupport::kNotSupported, "", "no syndics"},
    {"tcp_master_pub_port", SaltKeySupport::kIgnored, "", "used only with ipc_mode: tcp"},
    {"tcp_master_publish_pull", SaltKeySupport::kIgnored, "", "used only with ipc_mode: tcp"},
    {"tcp_master_pull_port", SaltKeySupport::kIgnored, "", "used only with ipc_mode: tcp"},
    {"tcp_master_workers", SaltKeySupport::kIgnored, "", "used only with ipc_mode: tcp"},
    {"test", SaltKeySupport::kIgnored, "", "set by Salt's own programs, not by operators"},
    {"thin_extra_mods", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"thorium_", SaltKeySupport::kNotSupported, "", "no thorium"},
    {"thoriumenv", SaltKeySupport::kNotSupported, "", "no thorium"},
    {"token_", SaltKeySupport::kNotSupported, "",
     "halite-api's eauth does not have it (docs/api.md: external_auth, token_expire, "
     "token_dir, permissive_acl are read)"},
    {"top_file_merging_strategy", SaltKeySupport::kIgnored, "",
     "states run on the minions with their own settings"},
    {"transport", SaltKeySupport::kNotSupported, "zeromq", "only the ZeroMQ transport"},
    {"unique_jid", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
    {"utils_dirs", SaltKeySupport::kIgnored, "",
     "halite-master loads no Python modules (minions still sync _modules and friends from "
     "file_roots)"},
    {"verify_env", SaltKeySupport::kIgnored, "", "set by Salt's own programs, not by operators"},
    {"winrepo_", SaltKeySupport::kNotSupported, "", "no winrepo runner"},
    {"zmq_monitor", SaltKeySupport::kIgnored, "",
     "an internal detail of salt-master with no counterpart"},
};

bool Matches(std::string_view pattern, std::string_view key) {
  if (pattern.starts_with('*')) return key.ends_with(pattern.substr(1));
  if (pattern.ends_with('_')) return key.starts_with(pattern) && key.size() > pattern.size();
  return false;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// YAML 1.1 booleans as Salt reads them, so "False", "no" and "off" all compare as "false".
std::string Canonical(const std::string& scalar) {
  const std::string lower = Lower(scalar);
  for (std::string_view t : {"true", "yes", "on", "y"}) {
    if (lower == t) return "true";
  }
  for (std::string_view f : {"false", "no", "off", "n"}) {
    if (lower == f) return "false";
  }
  return lower;
}

// Null, '', [] and {}: Salt's value for "not used".
bool IsEmpty(const YAML::Node& value) {
  if (!value || value.IsNull()) return true;
  if (value.IsScalar()) return value.Scalar().empty();
  return value.size() == 0;
}

// The value as `honoured` spells it: a scalar in lower case, a list of scalars joined by ','.
std::optional<std::string> Spelled(const YAML::Node& value) {
  if (value.IsScalar()) return Canonical(value.Scalar());
  if (!value.IsSequence()) return std::nullopt;
  std::string out;
  for (const auto& item : value) {
    if (!item.IsScalar()) return std::nullopt;
    if (!out.empty()) out += ",";
    out += Canonical(item.Scalar());
  }
  return out;
}

}  // namespace

const SaltMasterKey* FindSaltMasterKey(std::string_view key) {
  for (const SaltMasterKey& entry : kSaltMasterKeys) {
    if (entry.key == key) return &entry;
  }
  for (const SaltMasterKey& entry : kSaltMasterKeys) {
    if (Matches(entry.key, key)) return &entry;
  }
  return nullptr;
}

std::optional<std::string> DescribeUnreadMasterKey(std::string_view key, const YAML::Node& value) {
  const SaltMasterKey* entry = FindSaltMasterKey(key);
  if (entry == nullptr) return "unknown key '" + std::string(key) + "' (ignored)";
  if (IsEmpty(value)) return std::nullopt;
  if (!entry->honoured.empty() && Spelled(value) == entry->honoured) return std::nullopt;
  const std::string_view verdict =
      entry->support == SaltKeySupport::kIgnored ? "ignored" : "not supported";
  return std::string(key) + ": " + std::string(verdict) + ": " + std::string(entry->why);
}

}  // namespace halite::config::internal
