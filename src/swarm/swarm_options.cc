#include "halite/swarm/swarm_options.h"

#include <algorithm>
#include <charconv>

namespace halite::swarm {

namespace {

template <typename T>
bool ParseNumber(const std::string& text, T& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// "K=A,B,C" -> {K, {A, B, C}}; false without a key.
bool ParseGrain(const std::string& v, bool cycle, SwarmOptions& o) {
  auto eq = v.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!cycle) {
    o.grains.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    return true;
  }
  std::vector<std::string> values;
  std::string rest = v.substr(eq + 1);
  for (std::size_t start = 0;;) {
    std::size_t comma = rest.find(',', start);
    values.push_back(rest.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  o.grains_cycle.emplace_back(v.substr(0, eq), std::move(values));
  return true;
}

// One option that takes a value; false when the value is invalid, nullopt when `arg` is no
// such option.
std::optional<bool> ApplyOption(const std::string& arg, const std::string& v, SwarmOptions& o) {
  for (const auto& [name, field] : {std::pair{"--master", &SwarmOptions::master_ip},
                                    std::pair{"--prefix", &SwarmOptions::prefix},
                                    std::pair{"--log-level", &SwarmOptions::log_level},
                                    std::pair{"--log-file", &SwarmOptions::log_file}}) {
    if (arg == name) {
      o.*field = v;
      return true;
    }
  }
  if (arg == "--keys-dir") {
    o.keys_dir = v;
    return true;
  }
  if (arg == "--ledger") {
    o.ledger = v;
    return !v.empty();
  }
  if (arg == "--grains" || arg == "--grains-cycle") return ParseGrain(v, arg != "--grains", o);
  if (arg == "--port") return ParseNumber(v, o.port) && o.port != 0;
  if (arg == "--pub-port") return ParseNumber(v, o.pub_port);
  if (arg == "--count") return ParseNumber(v, o.count) && o.count > 0;
  if (arg == "--start-index") return ParseNumber(v, o.start_index) && o.start_index >= 0;
  if (arg == "--ramp") return ParseNumber(v, o.ramp) && o.ramp >= 0;
  if (arg == "--keysize") {
    return ParseNumber(v, o.keysize) && o.keysize >= 1024 && o.keysize <= 16384;
  }
  if (arg == "--latency-ms") return ParseNumber(v, o.latency_ms) && o.latency_ms >= 0;
  if (arg == "--protocol") {
    return ParseNumber(v, o.protocol) && (o.protocol == 2 || o.protocol == 3);
  }
  if (arg == "--duration") return ParseNumber(v, o.duration) && o.duration >= 0;
  if (arg == "--status-interval") {
    return ParseNumber(v, o.status_interval) && o.status_interval > 0;
  }
  if (arg == "--loops") return ParseNumber(v, o.loops) && o.loops > 0 && o.loops <= 64;
  if (arg == "--workers") return ParseNumber(v, o.workers) && o.workers > 0;
  if (arg == "--exec-workers") return ParseNumber(v, o.exec_workers) && o.exec_workers > 0;
  if (arg == "--io-threads") return ParseNumber(v, o.io_threads) && o.io_threads > 0;
  if (arg == "--job-timeout") return ParseNumber(v, o.job_timeout) && o.job_timeout >= 0;
  if (arg == "--acceptance-wait") {
    return ParseNumber(v, o.acceptance_wait) && o.acceptance_wait > 0;
  }
  if (arg == "--auth-timeout") return ParseNumber(v, o.auth_timeout) && o.auth_timeout > 0;
  if (arg == "--return-timeout") return ParseNumber(v, o.return_timeout) && o.return_timeout > 0;
  if (arg == "--random-reauth-delay") {
    return ParseNumber(v, o.random_reauth_delay) && o.random_reauth_delay >= 0;
  }
  if (arg == "--idle-close-ms") return ParseNumber(v, o.idle_close_ms) && o.idle_close_ms >= -1;
  return std::nullopt;
}

}  // namespace

std::string SwarmUsage() {
  return R"(usage: halite-swarm --master IP [options]
  --master IP            master address (never resolved)
  --port N               request port (4506)
  --pub-port N           publish port; 0: the one the master sends (0)
  --count N              number of minions (100)
  --prefix S             minion id prefix (swarm-); ids are <prefix><index>
  --start-index N        first index (0)
  --ramp R               sign-ins started per second, 0: all at once (100)
  --keys-dir DIR         per-minion pki dirs, keys made once and reused (./swarm-keys)
  --keysize BITS         size of newly made keys (2048)
  --grains K=V           static grain for every minion (repeatable)
  --grains-cycle K=A,B   grain K set to A, B, A, ... across minions (repeatable)
  --latency-ms N         extra time every job takes before it returns (0)
  --protocol 2|3         request protocol version (3)
  --duration S           stop after S seconds; 0: run until SIGINT/SIGTERM (0)
  --status-interval S    progress line period (5)
  --loops N              loop threads carrying the minions (2)
  --workers N            RSA worker threads (2)
  --exec-workers N       threads for blocking functions such as cmd.run (4)
  --io-threads N         ZeroMQ I/O threads (1)
  --job-timeout S        kill jobs running longer; 0: none (0)
  --acceptance-wait S    wait between sign-ins while a key is pending (10)
  --auth-timeout S       sign-in timeout per try (5)
  --return-timeout S     _return timeout per try, random up to twice this (5)
  --random-reauth-delay S  after a master key change, sign in again within S s (0)
  --idle-close-ms N      close idle request sockets after N ms; -1: only when fds are short
  --forget-master-key    drop cached minion_master.pub files first (switching masters)
  --ledger FILE          append every job run, return acknowledged and publish connection
                         change to FILE (one line each, written and fsynced per batch)
  --log-level L          (error)   --log-file PATH
  --version
)";
}

Result<SwarmCommand> ParseSwarmArgs(const std::vector<std::string>& args) {
  SwarmCommand command;
  SwarmOptions& o = command.options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--version" || arg == "-V") {
      command.action = SwarmCommand::Action::kVersion;
      return command;
    }
    if (arg == "-h" || arg == "--help") {
      command.action = SwarmCommand::Action::kHelp;
      return command;
    }
    if (arg == "--forget-master-key") {
      o.forget_master_key = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      return Error::InvalidArgument(arg + ": missing value or unknown option");
    }
    const std::string& v = args[++i];
    std::optional<bool> ok = ApplyOption(arg, v, o);
    if (!ok) return Error::InvalidArgument("unknown option " + arg);
    if (!*ok) return Error::InvalidArgument(arg + ": invalid value '" + v + "'");
  }
  if (o.master_ip.empty()) return Error::InvalidArgument("--master is required\n" + SwarmUsage());
  return command;
}

std::string MinionId(const SwarmOptions& options, int index) {
  return options.prefix + std::to_string(options.start_index + index);
}

minion::MinionOptions CommonMinionOptions(const SwarmOptions& o, int idle_close_ms) {
  minion::MinionOptions common;
  common.master_ip = o.master_ip;
  common.master_port = o.port;
  common.publish_port = o.pub_port;
  common.keysize = o.keysize;
  common.acceptance_wait_time = Ms(o.acceptance_wait);
  common.auth_timeout = Ms(o.auth_timeout);
  common.return_retry_timer = Ms(o.return_timeout);
  common.return_retry_timer_max = Ms(o.return_timeout * 2);
  common.request_protocol_version = o.protocol;
  common.function_latency = std::chrono::milliseconds(o.latency_ms);
  common.job_timeout = Ms(o.job_timeout);
  common.request_idle_close = std::chrono::milliseconds(idle_close_ms);
  common.random_reauth_delay = Ms(o.random_reauth_delay);
  return common;
}

minion::MinionOptions MinionOptionsFor(const SwarmOptions& o, const minion::MinionOptions& common,
                                       int index) {
  minion::MinionOptions options = common;
  options.id = MinionId(o, index);
  options.pki_dir = o.keys_dir / options.id;
  options.cachedir = options.pki_dir;
  wire::Value grains = wire::Value::EmptyMap();
  for (const auto& [k, values] : o.grains_cycle) {
    grains.Set(k, values[static_cast<std::size_t>(index) % values.size()]);
  }
  options.grains = std::move(grains);
  return options;
}

rlim_t WantedFileLimit(int count) { return static_cast<rlim_t>(count) * 6 + 1024; }

rlim_t MinimumFileLimit(int count) { return static_cast<rlim_t>(count) * 4 + 512; }

int EffectiveIdleCloseMs(const SwarmOptions& options, rlim_t nofile) {
  if (options.idle_close_ms >= 0) return options.idle_close_ms;
  return nofile < MinimumFileLimit(options.count) ? 2000 : 0;
}

}  // namespace halite::swarm
