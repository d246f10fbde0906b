// halite-minion: a Salt minion in C++. `halite-minion [-c /etc/salt/minion] [-l LEVEL]
// [--version]`. Runs in the foreground (for systemd); SIGTERM / SIGINT stop it cleanly.
// Exit codes: 0 stopped, 77 key rejected by the master (Salt's EX_NOPERM), 78 bad config,
// 1 cannot run (keys).
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <future>
#include <iostream>

#include "halite/common/logging.h"
#include "halite/common/service_manager.h"
#include "halite/config/minion_config.h"
#include "halite/minion/grains.h"
#include "halite/minion/minion.h"
#include "halite/transport/worker_pool.h"
#include "halite/transport/zmq_loop.h"
#include "halite/version.h"

namespace {

using halite::Result;
using halite::minion::MinionOptions;
using halite::wire::Value;

constexpr int kExitNoPerm = 77;

void Usage() {
  std::cerr << "usage: halite-minion [-c CONFIG] [-l LEVEL] [--version]\n"
               "  -c, --config PATH   minion config (default /etc/salt/minion)\n"
               "  -l, --log-level L   override log_level\n";
}

// A plain (unquoted) YAML scalar as Salt's YAML loader types it; quoted ones stay strings.
Value ScalarToValue(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return Value(text);
  static const char* kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* kFalse[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* t : kTrue) {
    if (text == t) return Value(true);
  }
  for (const char* f : kFalse) {
    if (text == f) return Value(false);
  }
  if (text == "~" || text == "null" || text == "Null" || text == "NULL") return Value();
  std::int64_t i = 0;
  auto [ip, iec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (iec == std::errc() && ip == text.data() + text.size() && !text.empty()) return Value(i);
  double d = 0;
  auto [dp, dec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (dec == std::errc() && dp == text.data() + text.size() && !text.empty()) return Value(d);
  return Value(text);
}

Value YamlToValue(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToValue(node);
    case YAML::NodeType::Sequence: {
      halite::wire::Array out;
      for (const auto& item : node) out.push_back(YamlToValue(item));
      return Value(std::move(out));
    }
    case YAML::NodeType::Map: {
      Value out = Value::EmptyMap();
      for (const auto& item : node) out.Set(item.first.Scalar(), YamlToValue(item.second));
      return out;
    }
    default:
      return Value();
  }
}

// The adapter boundary for the static grains node (yaml-cpp may throw).
Result<Value> GrainsFromYaml(const YAML::Node& grains) {
  try {
    if (!grains || grains.IsNull()) return Value::EmptyMap();
    if (!grains.IsMap()) return halite::Error::InvalidArgument("grains: must be a map");
    return YamlToValue(grains);
  } catch (const YAML::Exception& e) {
    return halite::Error::InvalidArgument(std::string("grains: ") + e.what());
  }
}

Result<MinionOptions> OptionsFromConfig(const halite::config::MinionConfig& c) {
  if (c.master.empty()) return halite::Error::InvalidArgument("master: no master configured");
  if (c.master.size() > 1) {
    spdlog::warn("{} masters configured; halite-minion uses the first ({})", c.master.size(),
                 c.master.front());
  }
  HALITE_ASSIGN_OR_RETURN(auto address,
                          halite::config::ParseMasterAddress(c.master.front(), c.master_port));
  MinionOptions o;
  o.id = c.id;
  o.master_ip = address.host;
  o.master_port = address.port;
  // Salt's rule (channel/client.py): a publish_port of 4506 means "the one the master sends".
  o.publish_port = c.publish_port == 4506 ? 0 : c.publish_port;
  o.pki_dir = c.pki_dir;
  o.cachedir = c.cachedir;
  o.keysize = c.keysize;
  o.acceptance_wait_time = c.acceptance_wait_time;
  o.acceptance_wait_time_max = c.acceptance_wait_time_max;
  o.auth_timeout = c.auth_timeout;
  o.auth_tries = c.auth_tries;
  o.rejected_retry = c.rejected_retry;
  o.request_timeout = c.request_channel_timeout;
  o.request_tries = c.request_channel_tries;
  o.return_retry_timer = c.return_retry_timer;
  o.return_retry_timer_max = c.return_retry_timer_max;
  o.return_retry_tries = c.return_retry_tries;
  o.recon_default = c.recon_default;
  o.recon_max = c.recon_max;
  o.recon_randomize = c.recon_randomize;
  o.encryption_algorithm = c.encryption_algorithm;
  o.signing_algorithm = c.signing_algorithm;
  o.request_protocol_version = c.request_protocol_version;
  o.sign_pub_messages = c.sign_pub_messages;
  HALITE_ASSIGN_OR_RETURN(o.grains, GrainsFromYaml(c.grains));
  o.job_timeout = c.job_timeout;
  HALITE_RETURN_IF_ERROR(halite::minion::ValidateOptions(o));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = "/etc/salt/minion";
  std::string log_level;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--version" || arg == "-V") {
      std::cout << "halite-minion " << halite::kVersion << "\n";
      return 0;
    } else if ((arg == "-c" || arg == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if ((arg == "-l" || arg == "--log-level") && i + 1 < argc) {
      log_level = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      return 0;
    } else {
      Usage();
      return 64;
    }
  }
  auto loaded = halite::config::LoadMinionConfig(config_path);
  if (!loaded.ok()) {
    std::cerr << "halite-minion: " << config_path << ": " << loaded.error().message << "\n";
    return halite::config::kExitConfig;
  }
  halite::config::MinionConfig config = std::move(loaded->config);
  if (!log_level.empty()) config.log_level = log_level;
  if (auto st = halite::SetUpLogging({config.log_level, config.log_file, "halite-minion"});
      !st.ok()) {
    std::cerr << "halite-minion: " << st.error().message << "\n";
    return halite::config::kExitConfig;
  }
  for (const auto& warning : loaded->warnings) spdlog::warn("{}: {}", config_path, warning);
  auto options = OptionsFromConfig(config);
  if (!options.ok()) {
    std::cerr << "halite-minion: " << config_path << ": " << options.error().message << "\n";
    return halite::config::kExitConfig;
  }

  // Signals are taken by this thread with sigwait; every other thread inherits the mask.
  // SIGUSR1 is how the loop wakes main when the minion stops on its own (rejected key).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    zmq::context_t context(1);
    halite::transport::WorkerPool crypto("crypto", 1);
    halite::transport::WorkerPool exec("exec", static_cast<std::size_t>(config.exec_workers));
    halite::transport::ZmqLoop loop("minion");
    halite::minion::MinionEnv env;
    env.context = &context;
    env.crypto_pool = &crypto;
    env.exec_pool = &exec;
    env.functions =
        std::make_shared<const halite::minion::FunctionTable>(halite::minion::BuiltinFunctions());
    env.system_grains = std::make_shared<const Value>(halite::minion::SystemGrains());

    std::atomic<int> exit_code{0};
    std::shared_ptr<halite::minion::Minion> minion;
    std::promise<halite::Status> created;
    loop.Post([&] {
      auto m = halite::minion::Minion::Create(loop, env, *options);
      if (!m.ok()) {
        created.set_value(m.error());
        return;
      }
      minion = *m;
      minion->OnStateChange([&exit_code](halite::minion::Minion::State state) {
        using State = halite::minion::Minion::State;
        if (state == State::kRejected || state == State::kFailed) {
          exit_code = state == State::kRejected ? kExitNoPerm : 1;
          kill(getpid(), SIGUSR1);
        }
      });
      minion->Start();
      created.set_value(halite::OkStatus());
    });
    loop.Start();
    if (auto st = created.get_future().get(); !st.ok()) {
      spdlog::critical("cannot start: {}", st.error().ToString());
      loop.Stop();
      return 1;
    }
    spdlog::info("halite-minion {} ({}) started; master {}:{}", halite::kVersion, options->id,
                 options->master_ip, options->master_port);

    halite::service::NotifyReady("minion " + options->id + " started; master " +
                                 options->master_ip + ":" + std::to_string(options->master_port));
    // systemd's watchdog (WatchdogSec=), when asked for: fed while the minion's loop answers.
    const auto watchdog = halite::service::WatchdogInterval();
    std::atomic<bool> loop_answered{true};
    int sig = 0;
    for (;;) {
      if (!watchdog) {
        if (sigwait(&signals, &sig) != 0) continue;
      } else {
        const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(*watchdog / 3);
        timespec ts{static_cast<time_t>(wait.count() / 1000000000),
                    static_cast<long>(wait.count() % 1000000000)};
        sig = sigtimedwait(&signals, nullptr, &ts);
        if (sig < 0) {
          if (loop_answered.exchange(false)) halite::service::NotifyWatchdog();
          loop.Post([&loop_answered] { loop_answered = true; });
          continue;
        }
      }
      if (sig != SIGHUP) break;
      spdlog::info("SIGHUP ignored (restart the minion to reload its config)");
    }
    spdlog::info("stopping (signal {})", sig);
    halite::service::NotifyStopping();

    std::promise<void> stopped;
    loop.Post([&] {
      minion->Stop();
      minion.reset();
      stopped.set_value();
    });
    stopped.get_future().wait();
    crypto.Shutdown();
    exec.Shutdown();
    loop.Stop();
    return exit_code.load();
  } catch (const std::exception& e) {
    spdlog::critical("halite-minion: {}", e.what());
    std::abort();
  }
}
