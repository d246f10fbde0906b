// Typed options of one minion (halite-minion fills them from MinionConfig, halite-swarm from
// its command line). Names and defaults follow Salt's minion config (salt-wire.md 2.3-2.5).
// Plain data; ValidateOptions is reentrant.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::minion {

struct MinionOptions {
  std::string id;
  std::string master_ip;  // an IP literal (IPv6 without brackets); never resolved
  std::uint16_t master_port = 4506;
  // 0: use the publish_port of the auth reply. Salt's minion uses its configured publish_port
  // unless that is 4506 (salt/channel/client.py), so halite-minion maps 4506 to 0.
  std::uint16_t publish_port = 0;
  std::filesystem::path pki_dir;   // minion.pem, minion.pub, minion_master.pub
  std::filesystem::path cachedir;  // reserved: the runtime writes nothing there yet
  int keysize = 2048;              // for a newly generated minion.pem

  // Sign-in (salt-wire.md 2.5).
  std::chrono::milliseconds acceptance_wait_time{10'000};
  std::chrono::milliseconds acceptance_wait_time_max{0};  // 0: no growth
  std::chrono::milliseconds auth_timeout{5'000};
  int auth_tries = 7;
  bool rejected_retry = false;  // false: a rejected key stops this minion
  // Salt's random_reauth_delay: a publish that fails to decrypt (new master key) triggers a
  // sign-in after a random wait in [0, this], so that many minions do not all sign in at
  // once. 0: at once.
  std::chrono::milliseconds random_reauth_delay{0};

  // Generic requests (_pillar, _minion_event).
  std::chrono::milliseconds request_timeout{60'000};
  int request_tries = 3;
  // Job returns: each try waits a random time in [timer, timer_max].
  std::chrono::milliseconds return_retry_timer{5'000};
  std::chrono::milliseconds return_retry_timer_max{10'000};  // <= timer: always timer
  int return_retry_tries = 3;

  // Publish socket reconnect interval: random in [recon_default, recon_default + recon_max]
  // when recon_randomize, and RECONNECT_IVL_MAX = recon_max (Salt's SUB options).
  std::chrono::milliseconds recon_default{1'000};
  std::chrono::milliseconds recon_max{10'000};
  bool recon_randomize = true;

  std::string encryption_algorithm = "OAEP-SHA1";   // or OAEP-SHA224
  std::string signing_algorithm = "PKCS1v15-SHA1";  // or PKCS1v15-SHA224
  int request_protocol_version = 3;                 // 3 (3006.12+/3007.4+) or 2
  bool sign_pub_messages = false;                   // require signed publishes

  // Static grains, merged over the system grains of MinionEnv (and "id" over both).
  wire::Value grains = wire::Value::EmptyMap();

  std::chrono::milliseconds job_timeout{0};  // 0: none; longer jobs are killed and reported

  // halite's own.
  bool fetch_pillar = true;       // _pillar at start (Salt always does)
  bool send_start_events = true;  // minion_start + salt/minion/<id>/start
  // Extra time every job takes before its return is sent (halite-swarm's --latency-ms); it
  // runs as a loop timer, not on a thread.
  std::chrono::milliseconds function_latency{0};
  // > 0: close the request connection after this much idle time and reopen it on the next
  // request (halite-swarm uses it to stay under the file-descriptor limit).
  std::chrono::milliseconds request_idle_close{0};
};

// Error::InvalidArgument listing every problem (empty id, master_ip, pki_dir; algorithms;
// protocol version; non-positive tries or timeouts).
Status ValidateOptions(const MinionOptions& options);

}  // namespace halite::minion
