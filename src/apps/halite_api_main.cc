// halite-api: a salt-api (rest_cherrypy) compatible REST API for the master on this host.
//   halite-api [-c /etc/halite/master] [-l LEVEL]
// Reads the master's config: `rest_cherrypy:` (host, port, disable_ssl, ssl_crt, ssl_key, app,
// app_path, static, static_path, ...), external_auth, token_expire, netapi_enable_clients.
// Talks to the master over its sock_dir as the CLIs do; run it as the master's user.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli_common.h"
#include "halite/api/api_options.h"
#include "halite/api/server.h"
#include "halite/auth/authenticator.h"
#include "halite/common/logging.h"
#include "halite/common/service_manager.h"
#include "halite/version.h"

namespace {

void Usage(std::ostream& os) {
  os << "usage: halite-api [-c CONFIG] [-l LEVEL]\n"
        "  -c, --config FILE    the master's config (default /etc/halite/master); its\n"
        "                       rest_cherrypy: section configures the API as salt-api's does\n"
        "  -l, --log-level L    debug, info, warning (default: the config's log_level)\n"
        "Serves salt-api's REST API (/login, /, /run, /events, /minions, /jobs, /keys,\n"
        "/hook, /stats, /token, /logout) with external_auth (pam, file). See docs/api.md.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = halite::apps::kDefaultMasterConfig;
  std::string level;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "halite-api: " << a << " needs an argument\n";
        std::exit(64);
      }
      return argv[++i];
    };
    if (a == "-c" || a == "--config") {
      config_path = need();
    } else if (a == "-l" || a == "--log-level") {
      level = need();
    } else if (a == "--version") {
      std::cout << "halite-api " << halite::kVersion << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      Usage(std::cout);
      return 0;
    } else {
      std::cerr << "halite-api: unknown argument " << a << "\n";
      Usage(std::cerr);
      return 64;
    }
  }
  auto cfg = halite::apps::LoadConfigOrComplain("halite-api", config_path);
  if (!cfg) return 78;
  auto api_options = halite::api::ParseApiOptions(cfg->source);
  auto auth_options = halite::auth::ParseAuthOptions(cfg->source, cfg->cachedir);
  if (!api_options.ok() || !auth_options.ok()) {
    if (!api_options.ok()) std::cerr << "halite-api: " << api_options.error().message << "\n";
    if (!auth_options.ok()) std::cerr << "halite-api: " << auth_options.error().message << "\n";
    return 78;
  }
  // stderr (the journal under systemd): the master's log_file is the master's.
  if (auto st = halite::SetUpLogging({level.empty() ? cfg->log_level : level, "", "halite-api"});
      !st.ok()) {
    std::cerr << "halite-api: " << st.error().message << "\n";
    return 78;
  }
  if (auth_options->allow_auto) {
    spdlog::warn("halite_eauth_auto is on: eauth 'auto' accepts any password (tests only)");
  }
  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto authenticator = halite::auth::Authenticator::Open(*auth_options);
  if (!authenticator.ok()) {
    std::cerr << "halite-api: " << authenticator.error().message << "\n";
    return 1;
  }
  halite::api::ApiServer server(*cfg, *api_options, **authenticator);
  if (auto st = server.Start(); !st.ok()) {
    std::cerr << "halite-api: " << st.error().message << "\n";
    return st.error().code == halite::ErrorCode::kInvalidArgument ? 78 : 1;
  }
  spdlog::info("halite-api listening on {}:{} ({})", api_options->host, server.port(),
               api_options->disable_ssl ? "http" : "https");
  halite::service::NotifyReady("halite-api listening");
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("halite-api: signal {}, stopping", sig);
  halite::service::NotifyStopping();
  server.Stop();
  return 0;
}
