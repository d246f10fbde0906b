// The minion's config (halite-minion, halite-swarm): Salt's key names and defaults
// (salt-wire.md 2.4, 2.5) plus halite's own keys. Parse* validates everything and reports every
// problem in one Error::InvalidArgument, one "key: what is wrong (got X)" per line.
//
// halite never resolves host names: every `master` entry must be an IP address, optionally with
// ":port" (IPv6 as "[addr]:port"). Salt's default "salt" is kept when `master` is not set, with
// a warning, and fails ParseMasterAddress.
// After parsing, root_dir (when set) has been put in front of pki_dir, cachedir, sock_dir and
// log_file, as Salt does.
// Thread-safety: plain data; the functions are reentrant. `grains` is a YAML::Node, whose
// copies share data: read it, don't modify it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/config/config.h"

namespace halite::config {

struct MinionConfig {
  std::string id;                              // Parse*: DefaultId() when not set
  std::vector<std::string> master = {"salt"};  // "ip" or "ip:port"; a string or a list in YAML
  std::uint16_t master_port = 4506;            // used when an entry has no port
  std::uint16_t publish_port = 4505;
  std::string root_dir;  // empty: none
  std::string pki_dir = "/etc/salt/pki/minion";
  std::string cachedir = "/var/cache/salt/minion";
  std::string sock_dir = "/var/run/salt/minion";
  std::string log_file;               // empty: stderr
  std::string log_level = "warning";  // Salt's names, see ParseLogLevel
  std::string user = "root";

  // --- Sign-in and retries (salt-wire.md 2.5). ---
  std::chrono::seconds acceptance_wait_time{10};
  std::chrono::seconds acceptance_wait_time_max{0};  // 0: no growth
  std::chrono::seconds auth_timeout{5};
  int auth_tries = 7;
  std::chrono::seconds request_channel_timeout{60};
  int request_channel_tries = 3;
  std::chrono::seconds return_retry_timer{5};
  std::chrono::seconds return_retry_timer_max{10};  // 0: always return_retry_timer
  int return_retry_tries = 3;
  bool rejected_retry = false;
  std::chrono::milliseconds recon_default{1000};
  std::chrono::milliseconds recon_max{10000};
  bool recon_randomize = true;

  // --- Crypto. ---
  int keysize = 2048;                               // 1024..16384 bits; below 2048 warns
  std::string encryption_algorithm = "OAEP-SHA1";   // or "OAEP-SHA224"
  std::string signing_algorithm = "PKCS1v15-SHA1";  // or "PKCS1v15-SHA224"
  bool sign_pub_messages = false;                   // require signed publishes

  YAML::Node grains{YAML::NodeType::Map};  // static grains
  bool ipv6 = false;

  // --- halite's own. ---
  int request_protocol_version = 3;     // 2 or 3
  std::chrono::seconds job_timeout{0};  // 0: none; longer jobs are killed
  int exec_workers = 4;
};

// One `master` entry split up. `host` is the IP address without brackets.
struct MasterAddress {
  std::string host;
  std::uint16_t port = 0;
};

// "1.2.3.4", "1.2.3.4:4506", "::1", "[::1]", "[::1]:4506". The port defaults to
// `default_port`. Error::InvalidArgument for host names (never resolved) and bad ports.
Result<MasterAddress> ParseMasterAddress(std::string_view entry, std::uint16_t default_port);

// Parses and validates minion config YAML. An empty document means all defaults; a top level
// that is not a map is an error. Unknown keys become warnings.
Result<Loaded<MinionConfig>> ParseMinionConfig(std::string_view yaml_text);
// ParseMinionConfig on a file's contents, with Salt's `default_include` (minion.d/*.conf) and
// `include:` merged in (LoadYamlFileWithIncludes). Error::NotFound when the file does not exist.
// Malformed YAML errors name the file; validation problems are the same lines as Parse gives.
Result<Loaded<MinionConfig>> LoadMinionConfig(const std::filesystem::path& path);
// The same for a node that was already parsed (null means all defaults).
Result<Loaded<MinionConfig>> MinionConfigFromYaml(const YAML::Node& root);

}  // namespace halite::config
