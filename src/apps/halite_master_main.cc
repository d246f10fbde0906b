// halite-master: one per node. `halite-master -c /etc/halite/master [--check] [--version]`.
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "halite/common/logging.h"
#include "halite/common/service_manager.h"
#include "halite/config/master_config.h"
#include "halite/daemon/master_daemon.h"
#include "halite/daemon/pillar_setup.h"
#include "halite/version.h"

namespace {

void Usage() {
  std::cerr << "usage: halite-master [-c CONFIG] [--check] [--version] [-l LEVEL]\n"
               "  -c, --config PATH   master config (default /etc/halite/master)\n"
               "  --check             validate the config and exit (78 when invalid)\n"
               "  -l, --log-level L   override log_level\n";
}

// `user: root` (Salt's default) while running as another user: halite never switches users,
// so what it writes belongs to the user running it. Another `user:` value already warns.
std::string RunningUser() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr) return pw->pw_name;
  return std::to_string(::geteuid());
}

std::optional<std::string> RunningUserMismatch(const std::string& configured) {
  if (configured != "root" || ::geteuid() == 0) return std::nullopt;
  const std::string running = RunningUser();
  return "user: ignored: halite-master runs as '" + running +
         "', not as 'root' (it never switches users); pki_dir, cachedir and sock_dir must be " +
         "writable by '" + running + "' (docs/migrate.md)";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = "/etc/halite/master";
  std::string log_level;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--version" || arg == "-V") {
      std::cout << "halite-master " << halite::kVersion << "\n";
      return 0;
    } else if ((arg == "-c" || arg == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if ((arg == "-l" || arg == "--log-level") && i + 1 < argc) {
      log_level = argv[++i];
    } else if (arg == "--check") {
      check_only = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      return 0;
    } else {
      Usage();
      return 64;
    }
  }
  auto loaded = halite::config::LoadMasterConfig(config_path);
  if (!loaded.ok()) {
    std::cerr << "halite-master: " << config_path << ": " << loaded.error().message << "\n";
    return halite::config::kExitConfig;
  }
  // Every setting halite does not honour, one per line, at every start and with --check.
  std::vector<std::string> warnings = std::move(loaded->warnings);
  if (auto user = RunningUserMismatch(loaded->config.user)) warnings.push_back(*user);
  for (const auto& warning : warnings) {
    std::cerr << "halite-master: warning: " << warning << "\n";
  }
  if (check_only) {
    // The pillar tree too: every top file and sls must at least parse.
    auto renderer = halite::daemon::MakeRendererPool(loaded->config);
    halite::pillar::PillarCompiler compiler(halite::daemon::PillarSettingsFrom(loaded->config),
                                            *renderer);
    auto problems = compiler.CheckTree();
    for (const auto& p : problems) std::cerr << "halite-master: pillar: " << p << "\n";
    if (!problems.empty()) return halite::config::kExitConfig;
    std::cout << config_path << ": OK\n";
    return 0;
  }
  halite::config::MasterConfig config = std::move(loaded->config);
  if (!log_level.empty()) config.log_level = log_level;
  halite::LogOptions log_options{config.log_level, config.log_file, "halite-master"};
  if (auto st = halite::SetUpLogging(log_options); !st.ok()) {
    std::cerr << "halite-master: " << st.error().message << "\n";
    return halite::config::kExitConfig;
  }
  // Said on stderr above; the log file gets them too, where an operator reads the rest.
  if (!config.log_file.empty()) {
    for (const auto& warning : warnings) spdlog::warn("config: {}", warning);
  }
  // Signals are taken by one thread with sigwait; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const std::string ready_status = "serving on " + config.interface + ": ret " +
                                   std::to_string(config.ret_port) + ", publish " +
                                   std::to_string(config.publish_port);
  const std::string dirs = config.pki_dir + ", " + config.cachedir + " and " + config.sock_dir;
  auto daemon = halite::daemon::MasterDaemon::Create(std::move(config));
  if (!daemon.ok()) {
    spdlog::critical("cannot start: {}", daemon.error().ToString());
    // Typically Salt's root-owned directories under a non-root halite-master.
    if (daemon.error().code == halite::ErrorCode::kPermissionDenied) {
      spdlog::critical("halite-master runs as '{}', which must own {} (docs/migrate.md)",
                       RunningUser(), dirs);
    }
    return 1;
  }
  if (auto st = (*daemon)->Start(); !st.ok()) {
    spdlog::critical("cannot start: {}", st.error().ToString());
    return 1;
  }
  // Type=notify: ready once every socket is bound and the keys are loaded.
  halite::service::NotifyReady(ready_status);
  halite::daemon::MasterDaemon* d = daemon->get();
  std::thread signal_thread([d, signals, config_path] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        d->Reload(config_path);
        continue;
      }
      spdlog::info("signal {}: stopping", strsignal(sig));
      d->RequestStop();
      return;
    }
  });
  d->RunUntilStopped();
  d->Stop();
  signal_thread.join();
  return 0;
}
